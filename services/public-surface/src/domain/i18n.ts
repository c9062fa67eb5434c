/**
 * The page's two languages. Field labels come from the category schema (its `title`, in English); the French
 * label of a field is taken from FIELD_LABELS_FR by its key, else the schema's English title is shown.
 */
export const LANGUAGES = ["en", "fr"] as const;
export type Lang = (typeof LANGUAGES)[number];

/** ?lang= wins, then the best of Accept-Language (q-values honoured), then English. */
export function pickLanguage(query: string | null, acceptLanguage: string | undefined): Lang {
  if (query === "en" || query === "fr") return query;
  if (!acceptLanguage) return "en";
  let best: Lang = "en";
  let bestQ = -1;
  for (const part of acceptLanguage.split(",")) {
    const [tag, ...params] = part.trim().toLowerCase().split(";");
    const qParam = params.find((p) => p.trim().startsWith("q="));
    const q = qParam ? Number(qParam.trim().slice(2)) : 1;
    const primary = (tag ?? "").split("-")[0];
    if ((primary === "en" || primary === "fr") && q > bestQ) {
      best = primary;
      bestQ = q;
    }
  }
  return best;
}

export const UI: Record<Lang, Record<string, string>> = {
  en: {
    passport: "Digital Product Passport",
    identity: "Identity and operator",
    composition: "Composition",
    substances: "Substances of concern",
    substancesNone: "The manufacturer declares that no substance of concern is present.",
    environment: "Environmental information",
    environmentNote:
      "Environmental information is declared by the manufacturer, who must be able to substantiate it. Figures are shown as declared.",
    care: "Care, repair and end of life",
    variants: "Variants",
    units: "Battery units",
    documents: "Documents",
    photos: "Photos",
    other: "Other information",
    size: "Size",
    colour: "Colour",
    gtin: "GTIN",
    serial: "Serial number",
    status: "Status",
    category: "Product category",
    published: "Published",
    updated: "Last updated",
    language: "Language",
    download: "Download",
    photoOf: "Photo",
    scanned: "You scanned this variant",
    qr: "QR code of this passport",
    skip: "Skip to the passport",
    footer: "Public information of this product's Digital Product Passport.",
    dataViews: "This information as data",
    notFoundTitle: "No published passport here",
    notFoundText:
      "No published Digital Product Passport answers at this address. The product may not be published yet, may have been withdrawn, or the code may be mistyped.",
    notFoundMaker:
      "If you make this product: a passport appears here once it is published in live mode; test passports and drafts are never public.",
    yes: "Yes",
    no: "No",
    previewBanner:
      "Preview for the maker only: this passport is not public (a draft, a test passport or not published). This link expires.",
    previewInvalidTitle: "This preview link is not valid",
    previewInvalidText:
      "The link has expired or was altered. Ask the passport's links again through the API (preview_url) for a fresh one.",
  },
  fr: {
    passport: "Passeport numérique de produit",
    identity: "Identité et opérateur",
    composition: "Composition",
    substances: "Substances préoccupantes",
    substancesNone: "Le fabricant déclare qu’aucune substance préoccupante n’est présente.",
    environment: "Informations environnementales",
    environmentNote:
      "Les informations environnementales sont déclarées par le fabricant, qui doit pouvoir les justifier. Les valeurs sont affichées telles que déclarées.",
    care: "Entretien, réparation et fin de vie",
    variants: "Déclinaisons",
    units: "Unités de batterie",
    documents: "Documents",
    photos: "Photos",
    other: "Autres informations",
    size: "Taille",
    colour: "Couleur",
    gtin: "GTIN",
    serial: "Numéro de série",
    status: "Statut",
    category: "Catégorie de produit",
    published: "Publié le",
    updated: "Mis à jour le",
    language: "Langue",
    download: "Télécharger",
    photoOf: "Photo",
    scanned: "Vous avez scanné cette déclinaison",
    qr: "QR code de ce passeport",
    skip: "Aller au passeport",
    footer: "Informations publiques du passeport numérique de ce produit.",
    dataViews: "Ces informations en données",
    notFoundTitle: "Aucun passeport publié ici",
    notFoundText:
      "Aucun passeport numérique de produit publié ne répond à cette adresse. Le produit n’est peut-être pas encore publié, a pu être retiré, ou le code est mal saisi.",
    notFoundMaker:
      "Si vous fabriquez ce produit : un passeport apparaît ici une fois publié en mode live ; les passeports de test et les brouillons ne sont jamais publics.",
    yes: "Oui",
    no: "Non",
    previewBanner:
      "Aperçu réservé au fabricant : ce passeport n’est pas public (brouillon, passeport de test ou non publié). Ce lien expire.",
    previewInvalidTitle: "Ce lien d’aperçu n’est pas valide",
    previewInvalidText:
      "Le lien a expiré ou a été modifié. Demandez à nouveau les liens du passeport via l’API (preview_url) pour en obtenir un nouveau.",
  },
};

/** French labels of the category fields, by `data` key (the schema's titles are English). */
export const FIELD_LABELS_FR: Record<string, string> = {
  product_name: "Nom du produit",
  product_description: "Description du produit",
  brand_name: "Marque",
  model_identifier: "Référence du modèle",
  battery_model_identifier: "Référence du modèle de batterie",
  battery_category: "Catégorie de batterie",
  gtin: "GTIN",
  serial_number: "Numéro de série",
  commodity_code: "Code de nomenclature douanière",
  manufacturer_name: "Nom du fabricant",
  manufacturer_address: "Adresse du fabricant",
  manufacturer_country: "Pays du fabricant",
  manufacturer_contact: "Contact du fabricant",
  manufacturer_operator_identifier: "Identifiant d’opérateur du fabricant",
  importer_name: "Nom de l’importateur",
  importer_eori: "EORI de l’importateur",
  manufacturing_country: "Pays de fabrication",
  manufacturing_place: "Lieu de fabrication",
  manufacturing_date: "Date de fabrication",
  manufacturing_facility_identifier: "Identifiant du site de fabrication",
  manufacturing_facilities: "Sites de fabrication",
  spinning_country: "Pays de filature",
  weaving_knitting_country: "Pays de tissage ou de tricotage",
  dyeing_printing_country: "Pays de teinture ou d’impression",
  making_up_country: "Pays de confection",
  material_composition: "Composition en fibres",
  materials: "Matériaux",
  fiber: "Fibre",
  percentage: "Pourcentage",
  substances_of_concern: "Substances préoccupantes",
  hazardous_substances: "Substances dangereuses",
  critical_raw_materials: "Matières premières critiques",
  recycled_content_percentage: "Contenu recyclé",
  recycling_instructions: "Consignes de recyclage",
  care_instructions: "Conseils d’entretien",
  washing_durability: "Résistance au lavage",
  durability_information: "Informations sur la durabilité",
  repair_information: "Informations sur la réparation",
  disassembly_information: "Informations sur le démontage",
  product_mass: "Masse du produit",
  carbon_footprint: "Empreinte carbone",
  environmental_cost: "Coût environnemental",
  microfibre_release: "Rejet de microfibres",
  certifications: "Certifications et labels",
  scheme: "Label ou référentiel",
  certificate_number: "Numéro de certificat",
  issuer: "Organisme certificateur",
  valid_until: "Valide jusqu’au",
  end_of_life_category: "Filière de fin de vie",
  expected_lifetime: "Durée de vie prévue",
  spare_parts_availability: "Disponibilité des pièces détachées",
  repairability_score: "Indice de réparabilité",
  battery_weight: "Masse de la batterie",
  rated_capacity: "Capacité nominale",
  battery_chemistry: "Chimie de la batterie",
  usable_extinguishing_agent: "Agent extincteur utilisable",
  carbon_footprint_per_kwh: "Empreinte carbone par kWh",
  carbon_footprint_performance_class: "Classe de performance carbone",
  recycled_content_cobalt_percentage: "Cobalt recyclé",
  recycled_content_lithium_percentage: "Lithium recyclé",
  recycled_content_nickel_percentage: "Nickel recyclé",
  recycled_content_lead_percentage: "Plomb recyclé",
  renewable_content_percentage: "Contenu renouvelable",
  nominal_voltage: "Tension nominale",
  minimum_voltage: "Tension minimale",
  maximum_voltage: "Tension maximale",
  original_power_capability: "Puissance initiale",
  certified_usable_energy: "Énergie utilisable certifiée",
  commercial_warranty_period: "Durée de la garantie commerciale",
  end_of_life_information: "Informations sur la fin de vie",
};

/** Enumerated values shown in words. */
export const VALUE_LABELS: Record<Lang, Record<string, string>> = {
  en: {
    reuse: "Reuse",
    repair: "Repair",
    fibre_to_fibre_recycling: "Fibre-to-fibre recycling",
    downcycling: "Downcycling",
    other: "Other",
  },
  fr: {
    reuse: "Réemploi",
    repair: "Réparation",
    fibre_to_fibre_recycling: "Recyclage fibre à fibre",
    downcycling: "Décyclage",
    other: "Autre",
  },
};
