/**
 * Textile and apparel products (ESPR priority product group).
 *
 * The first ten fields are the observed shapes of the v1 interface (spec "Passport" / `data`) and must not change:
 * product_name, product_description, manufacturer_name, manufacturer_address, manufacturer_country,
 * material_composition, substances_of_concern, recycled_content_percentage, recycling_instructions, gtin.
 * The rest follows ESPR (EU) 2024/1781 Art. 7 and Annex III, the Textile Labelling Regulation (EU) No 1007/2011
 * (fibre names and percentages), and the French traceability and affichage rules (countries of the processing
 * steps, environmental cost in points).
 */
import {
  COMMODITY_CODE_PATTERN,
  EORI_PATTERN,
  countryCode,
  defineCategory,
  enumeration,
  gtin,
  item,
  longText,
  objectList,
  percentage,
  quantity,
  stringList,
  text,
  withDocument,
} from "./fields";

export const TEXTILE_PROCESSING_STEPS = [
  "fibre_production",
  "spinning",
  "weaving_knitting",
  "dyeing_printing",
  "finishing",
  "making_up",
] as const;

export const textile = defineCategory({
  id: "textile",
  displayName: "Textiles and apparel",
  description:
    "Clothing, footwear textiles and home textiles placed on the EU market: identification, operators, fibre composition, substances of concern, processing countries, care, durability, end of life and environmental information.",
  schemaVersion: "2026-08-01",
  regulations: [
    "Regulation (EU) 2024/1781 (Ecodesign for Sustainable Products Regulation), Art. 7-13 and Annex III",
    "Regulation (EU) No 1007/2011 (textile fibre names and labelling)",
    "Regulation (EC) No 1907/2006 (REACH), Art. 33 and Annex XVII",
    "Décret n° 2025-957 (France, affichage environnemental of textile products)",
  ],
  properties: {
    // --- Observed v1 fields (shapes fixed by the interface) ---------------------------------------------------
    product_name: text({
      title: "Product name",
      description: "Commercial name of the product model.",
      publish: true,
    }),
    product_description: longText({
      title: "Product description",
      description: "Short description of the product as offered to customers.",
    }),
    manufacturer_name: text({
      title: "Manufacturer name",
      description:
        "Registered trade name of the manufacturer (or the operator placing the product on the market).",
      publish: true,
    }),
    manufacturer_address: text(
      {
        title: "Manufacturer address",
        description: "Postal address of the manufacturer.",
        publish: true,
      },
      { maxLength: 1000 },
    ),
    manufacturer_country: countryCode({
      title: "Manufacturer country",
      description: "Country of the manufacturer's address, as an ISO 3166-1 alpha-2 code in capitals.",
      publish: true,
    }),
    material_composition: objectList(
      {
        title: "Fibre composition",
        description:
          "Fibre composition by weight, using the fibre names of Regulation (EU) No 1007/2011 Annex I; percentages should add up to 100.",
        publish: true,
      },
      {
        properties: {
          fiber: item.text('Fibre name, e.g. "cotton", "polyester", "elastane".'),
          percentage: item.percentage("Share of the product's weight, 0 to 100."),
        },
        required: ["fiber", "percentage"],
      },
      { minItems: 1, maxItems: 50 },
    ),
    substances_of_concern: stringList({
      title: "Substances of concern",
      description:
        "Names of substances of concern present in the product (ESPR Art. 7(5)); an empty list declares that none are present.",
      publish: true,
    }),
    recycled_content_percentage: percentage({
      title: "Recycled content",
      description: "Share of recycled fibres in the product's weight, 0 to 100.",
      environmental: true,
    }),
    recycling_instructions: longText({
      title: "Recycling instructions",
      description: "How to sort, return or recycle the product at end of life.",
      publish: true,
    }),
    gtin: gtin({
      title: "GTIN",
      description: "GS1 Global Trade Item Number (8, 12, 13 or 14 digits) of the product model.",
    }),

    // --- Identification and operators (ESPR Annex III) ----------------------------------------------------------
    brand_name: text({ title: "Brand", description: "Brand under which the product is sold." }),
    model_identifier: text({
      title: "Model reference",
      description:
        "Manufacturer's model or article reference (the French 'référence': same colour, composition and shape).",
    }),
    commodity_code: text(
      {
        title: "Commodity code",
        description:
          "Combined Nomenclature (8 digits) or TARIC (10 digits) code, needed for the EU DPP registry.",
      },
      { maxLength: 10, pattern: COMMODITY_CODE_PATTERN },
    ),
    manufacturer_contact: text({
      title: "Manufacturer contact",
      description: "E-mail address or web address where the manufacturer can be contacted.",
    }),
    manufacturer_operator_identifier: text({
      title: "Manufacturer operator identifier",
      description:
        "Unique operator identifier of the manufacturer (ESPR Annex III (h)), e.g. a GLN or EORI number.",
    }),
    importer_name: text({
      title: "Importer name",
      description: "Name of the importer, when the manufacturer is established outside the EU.",
    }),
    importer_eori: text(
      {
        title: "Importer EORI",
        description: "EORI number of the importer (ESPR Annex III (j)).",
      },
      { maxLength: 17, pattern: EORI_PATTERN },
    ),

    // --- Supply chain ------------------------------------------------------------------------------------------
    spinning_country: countryCode({
      title: "Country of spinning",
      description: "Country where the yarn was spun (ISO 3166-1 alpha-2).",
    }),
    weaving_knitting_country: countryCode({
      title: "Country of weaving or knitting",
      description: "Country where the fabric was woven or knitted (ISO 3166-1 alpha-2).",
    }),
    dyeing_printing_country: countryCode({
      title: "Country of dyeing or printing",
      description: "Country where the fabric was dyed or printed (ISO 3166-1 alpha-2).",
    }),
    making_up_country: countryCode({
      title: "Country of making-up",
      description: "Country where the product was cut and sewn or otherwise assembled (ISO 3166-1 alpha-2).",
    }),
    manufacturing_facilities: objectList(
      {
        title: "Manufacturing facilities",
        description:
          "Facilities involved in each processing step, with their unique facility identifiers (ESPR Annex III (i)).",
        tier: "restricted",
      },
      {
        properties: {
          step: item.enumeration("Processing step carried out at the facility.", TEXTILE_PROCESSING_STEPS),
          facility_identifier: item.text("Unique facility identifier, e.g. a GLN."),
          facility_name: item.text("Name of the facility."),
          country: item.country("Country of the facility (ISO 3166-1 alpha-2)."),
        },
        required: ["step", "facility_identifier"],
      },
    ),

    // --- Use, care, durability, repair ---------------------------------------------------------------------------
    ...withDocument(
      "care_instructions",
      longText({
        title: "Care instructions",
        description:
          "Washing, drying, ironing and cleaning instructions; the care label may be attached as a document.",
        publish: true,
      }),
    ),
    washing_durability: quantity(
      "cycles",
      {
        title: "Washing durability",
        description: "Number of domestic wash cycles the product withstood in durability testing.",
      },
      { integer: true },
    ),
    durability_information: longText({
      title: "Durability information",
      description:
        "Results of physical durability tests (pilling, abrasion, colour fastness, dimensional stability).",
    }),
    repair_information: longText({
      title: "Repair information",
      description:
        "How the product can be repaired, and where repair services or spare parts (buttons, zips) are offered.",
    }),
    disassembly_information: longText({
      title: "Disassembly information",
      description:
        "How to remove trims, zips, buttons and other non-textile parts before recycling; for repairers and recyclers.",
      tier: "restricted",
    }),

    // --- Environmental information -----------------------------------------------------------------------------
    product_mass: quantity("g", {
      title: "Product mass",
      description: "Mass of one product, used among others for the environmental cost per 100 g.",
    }),
    carbon_footprint: quantity("kgCO2e", {
      title: "Carbon footprint",
      description: "Life-cycle greenhouse-gas emissions of one product.",
      environmental: true,
    }),
    environmental_cost: quantity("points", {
      title: "Environmental cost",
      description:
        "Environmental cost of one product in points, as computed by the French method (affichage environnemental).",
      environmental: true,
    }),
    microfibre_release: quantity("mg/kg", {
      title: "Microfibre release",
      description: "Microfibres released during one wash, in milligrams per kilogram of textile.",
      environmental: true,
    }),
    ...withDocument(
      "certifications",
      objectList(
        {
          title: "Certifications and labels",
          description:
            "Certifications and labels held by the product (e.g. EU Ecolabel, GOTS, OEKO-TEX); the certificate may be attached as a document.",
          environmental: true,
        },
        {
          properties: {
            scheme: item.text('Certification scheme or label, e.g. "EU Ecolabel".'),
            certificate_number: item.text("Certificate or licence number."),
            issuer: item.text("Certification body."),
            valid_until: item.date("Last day of validity (YYYY-MM-DD)."),
          },
          required: ["scheme"],
        },
        { maxItems: 50 },
      ),
    ),
    end_of_life_category: enumeration(
      {
        title: "End-of-life route",
        description: "Preferred end-of-life route for the product.",
      },
      ["reuse", "repair", "fibre_to_fibre_recycling", "downcycling", "other"],
    ),

    // --- Compliance ----------------------------------------------------------------------------------------------
    ...withDocument(
      "compliance_documentation",
      longText({
        title: "Compliance documentation",
        description:
          "Reference to the technical documentation and test reports showing compliance (ESPR Annex III (g)).",
        tier: "authority",
      }),
    ),
  },
});
