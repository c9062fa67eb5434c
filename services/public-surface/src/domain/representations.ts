/**
 * The other views of the same public data: the resolver's links of a passport (GS1 link types), its public JSON,
 * and its JSON-LD (schema.org Product). Pure.
 */
import type { PublicView } from "../app/views";
import { GS1_VOC, type LinkMap, type LinkTarget } from "./digital-link";
import { sectionKeys } from "./page";

export function productName(view: PublicView): string {
  return typeof view.data.product_name === "string" ? view.data.product_name : view.categoryName;
}

/** The page a scan leads to: the public page, showing the scanned variant when a variant's GTIN was scanned. */
export function pageHref(view: PublicView, variantGtin14: string | null): string {
  return variantGtin14 ? `${view.publicUrl}?variant=${variantGtin14}` : view.publicUrl;
}

/**
 * The links of a passport at GTIN level, and, when the request names a serial the passport knows (its own
 * serial_number or one of its battery units'), the serial level's own link added to them: the serial level
 * always includes the GTIN level's links. Exactly one default link: the public page.
 */
export function passportLinks(
  view: PublicView,
  o: { variantGtin14: string | null; serial?: string },
): LinkMap {
  const name = productName(view);
  const page = pageHref(view, o.variantGtin14);
  const html = (title: string, href = page): LinkTarget => ({
    href,
    title,
    type: "text/html",
    hreflang: ["en", "fr"],
  });
  const keys = sectionKeys(view);
  const links: LinkMap = {
    [`${GS1_VOC}defaultLink`]: [html(`${name}: Digital Product Passport`)],
    [`${GS1_VOC}dpp`]: [
      html(`${name}: Digital Product Passport`),
      {
        href: view.publicUrl,
        title: `${name}: Digital Product Passport (JSON-LD)`,
        type: "application/ld+json",
      },
    ],
    [`${GS1_VOC}pip`]: [html(`${name}: product information`)],
  };
  if (keys.environment!.length > 0)
    links[`${GS1_VOC}sustainabilityInfo`] = [
      html(`${name}: environmental information`, `${page}#environment`),
    ];
  if (view.data.care_instructions !== undefined)
    links[`${GS1_VOC}careInstructions`] = [html(`${name}: care instructions`, `${page}#care`)];
  if (
    view.data.recycling_instructions !== undefined ||
    view.data.end_of_life_category !== undefined ||
    view.data.end_of_life_information !== undefined
  )
    links[`${GS1_VOC}recyclingInfo`] = [html(`${name}: recycling and end of life`, `${page}#care`)];
  if (view.data.certifications !== undefined)
    links[`${GS1_VOC}certificationInfo`] = [html(`${name}: certifications`, `${page}#environment`)];
  if (o.serial !== undefined && knowsSerial(view, o.serial)) {
    const unit = view.serial === o.serial ? "" : `#units`;
    links[`${GS1_VOC}dpp`]!.push(
      html(`${name}, serial number ${o.serial}: Digital Product Passport`, `${page}${unit}`),
    );
  }
  return links;
}

export function knowsSerial(view: PublicView, serial: string): boolean {
  return view.serial === serial || view.units.some((u) => u.serial === serial);
}

/** The public JSON of a passport: the same data as the page. */
export function publicJson(view: PublicView) {
  return {
    object: "public_passport",
    id: view.id,
    category: view.category,
    product_name: productName(view),
    gtin: view.gtin14,
    serial_number: view.serial,
    published_at: view.publishedAt,
    updated_at: view.updatedAt,
    public_url: view.publicUrl,
    qr_target: view.qrTarget,
    gs1_digital_link: view.digitalLink,
    data: view.data,
    variants: view.variants.map((v) => ({ gtin: v.gtin14, size: v.size, colour: v.colour })),
    units: view.units.map((u) => ({ unit_serial: u.serial, status: u.status })),
    documents: view.documents.map((d) => ({
      id: d.id,
      type: d.type,
      name: d.name,
      mime_type: d.mimeType,
      file_size: d.fileSize,
      url: documentUrl(view, d.id),
    })),
  };
}

export function documentUrl(view: PublicView, documentId: string): string {
  return `${view.publicUrl}/documents/${encodeURIComponent(documentId)}`;
}

const str = (v: unknown) => (typeof v === "string" && v !== "" ? v : undefined);

/** schema.org Product in JSON-LD, with the passport's identifiers. */
export function jsonLd(view: PublicView) {
  const d = view.data;
  const images = view.documents.filter((x) => x.mimeType.startsWith("image/"));
  const files = view.documents.filter((x) => !x.mimeType.startsWith("image/"));
  const composition = Array.isArray(d.material_composition)
    ? (d.material_composition as Array<Record<string, unknown>>).map((m) =>
        typeof m.percentage === "number" ? `${String(m.fiber)} ${m.percentage} %` : String(m.fiber),
      )
    : undefined;
  const properties = Object.entries(d)
    .filter(([k]) => !k.endsWith("_document_id"))
    .map(([k, v]) => {
      const q = v as { value?: unknown; unit?: unknown } | null;
      const p: Record<string, unknown> = {
        "@type": "PropertyValue",
        propertyID: k,
        name: view.fields[k]?.title ?? k,
      };
      if (q && typeof q === "object" && typeof q.value === "number" && typeof q.unit === "string") {
        p.value = q.value;
        p.unitText = q.unit;
      } else p.value = typeof v === "object" ? JSON.stringify(v) : v;
      return p;
    });
  return {
    "@context": "https://schema.org",
    "@type": "Product",
    "@id": view.publicUrl,
    url: view.publicUrl,
    name: productName(view),
    description: str(d.product_description),
    gtin14: view.gtin14 ?? undefined,
    serialNumber: view.serial ?? undefined,
    model: str(d.model_identifier) ?? str(d.battery_model_identifier),
    category: view.categoryName,
    brand: str(d.brand_name) ? { "@type": "Brand", name: d.brand_name } : undefined,
    manufacturer: str(d.manufacturer_name)
      ? {
          "@type": "Organization",
          name: d.manufacturer_name,
          address: str(d.manufacturer_address),
          identifier: str(d.manufacturer_operator_identifier),
        }
      : undefined,
    countryOfOrigin: str(d.manufacturer_country) ?? str(d.manufacturing_country),
    material: composition,
    image: images.length > 0 ? images.map((i) => documentUrl(view, i.id)) : undefined,
    subjectOf:
      files.length > 0
        ? files.map((f) => ({
            "@type": "DigitalDocument",
            name: f.name,
            url: documentUrl(view, f.id),
            encodingFormat: f.mimeType,
          }))
        : undefined,
    hasVariant:
      view.variants.length > 0
        ? view.variants.map((v) => ({
            "@type": "Product",
            gtin14: v.gtin14,
            size: v.size ?? undefined,
            color: v.colour ?? undefined,
          }))
        : undefined,
    sameAs: view.digitalLink ?? undefined,
    hasDigitalProductPassport: view.publicUrl,
    additionalProperty: properties,
  };
}
