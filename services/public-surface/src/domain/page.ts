/**
 * The public passport page: server-rendered HTML without JavaScript, grouped as a reader expects, readable on a
 * phone (one column, fluid images, large type) and accessible (lang, landmarks, one h1 and an h2 per section,
 * table headers with scope, alt text on every image, text contrast of 7:1 or more). Pure: the view in, the page
 * out.
 */
import type { FieldInfo, PublicView } from "../app/views";
import { FIELD_LABELS_FR, LANGUAGES, UI, VALUE_LABELS, type Lang } from "./i18n";

export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

const IDENTITY = [
  "brand_name",
  "model_identifier",
  "battery_model_identifier",
  "battery_category",
  "gtin",
  "serial_number",
  "product_description",
  "commodity_code",
  "manufacturer_name",
  "manufacturer_address",
  "manufacturer_country",
  "manufacturer_contact",
  "manufacturer_operator_identifier",
  "importer_name",
  "importer_eori",
  "manufacturing_country",
  "manufacturing_place",
  "manufacturing_date",
  "manufacturing_facility_identifier",
  "spinning_country",
  "weaving_knitting_country",
  "dyeing_printing_country",
  "making_up_country",
  "manufacturing_facilities",
];
const COMPOSITION = [
  "material_composition",
  "materials",
  "battery_chemistry",
  "critical_raw_materials",
  "product_mass",
  "battery_weight",
];
const SUBSTANCES = ["substances_of_concern", "hazardous_substances"];
const CARE = [
  "care_instructions",
  "washing_durability",
  "durability_information",
  "repair_information",
  "disassembly_information",
  "spare_parts_availability",
  "repairability_score",
  "expected_lifetime",
  "commercial_warranty_period",
  "recycling_instructions",
  "end_of_life_category",
  "end_of_life_information",
];
const SHOWN_ELSEWHERE = new Set(["product_name"]);

export interface PageInput {
  view: PublicView;
  lang: Lang;
  /** A preview for the organization's own people (preview_url): its token, carried by every link of the page. */
  previewToken?: string;
  /** The variant GTIN the visitor scanned (?variant=), if it is one of the passport's. */
  variantGtin14: string | null;
  /** The page's own path and query without lang (for the language switch). */
  path: string;
  query: URLSearchParams;
}

export interface Section {
  id: string;
  title: string;
  html: string;
}

function label(lang: Lang, key: string, info: FieldInfo | undefined): string {
  if (lang === "fr" && FIELD_LABELS_FR[key]) return FIELD_LABELS_FR[key]!;
  return info?.title ?? key.replace(/_/g, " ");
}

function memberLabel(lang: Lang, key: string, info: FieldInfo | undefined): string {
  if (lang === "fr" && FIELD_LABELS_FR[key]) return FIELD_LABELS_FR[key]!;
  const t = info?.members?.[key];
  // Item members are described by a sentence; a short key reads better than that as a column header.
  return t && t.length <= 30 ? t : key.charAt(0).toUpperCase() + key.slice(1).replace(/_/g, " ");
}

function formatNumber(lang: Lang, n: number): string {
  return new Intl.NumberFormat(lang === "fr" ? "fr-FR" : "en-GB", { maximumFractionDigits: 3 }).format(n);
}

/** One value as HTML: text, a number with its unit, a list, a table of items, or a description list. */
export function valueHtml(lang: Lang, key: string, value: unknown, info?: FieldInfo): string {
  if (value === null || value === undefined) return "";
  if (typeof value === "boolean") return escapeHtml(value ? UI[lang].yes! : UI[lang].no!);
  if (typeof value === "number") {
    const pct = /percentage$/.test(key) ? " %" : "";
    return escapeHtml(formatNumber(lang, value) + pct);
  }
  if (typeof value === "string") {
    const word = VALUE_LABELS[lang][value];
    return `<span class="text">${escapeHtml(word ?? value)}</span>`;
  }
  if (Array.isArray(value)) {
    if (value.length === 0) return "";
    if (value.every((v) => typeof v !== "object" || v === null))
      return `<ul>${value.map((v) => `<li>${valueHtml(lang, key, v)}</li>`).join("")}</ul>`;
    const members = [...new Set(value.flatMap((v) => (v && typeof v === "object" ? Object.keys(v) : [])))];
    const head = members
      .map((m) => `<th scope="col">${escapeHtml(memberLabel(lang, m, info))}</th>`)
      .join("");
    const rows = value
      .map(
        (v) =>
          `<tr>${members
            .map((m) => `<td>${valueHtml(lang, m, (v as Record<string, unknown>)?.[m])}</td>`)
            .join("")}</tr>`,
      )
      .join("");
    return `<div class="scroll"><table><thead><tr>${head}</tr></thead><tbody>${rows}</tbody></table></div>`;
  }
  if (typeof value === "object") {
    const o = value as Record<string, unknown>;
    if (typeof o.value === "number" && typeof o.unit === "string")
      return escapeHtml(`${formatNumber(lang, o.value)} ${o.unit}`);
    return `<dl class="inner">${Object.entries(o)
      .map(([k, v]) => `<dt>${escapeHtml(memberLabel(lang, k, info))}</dt><dd>${valueHtml(lang, k, v)}</dd>`)
      .join("")}</dl>`;
  }
  return "";
}

function fieldList(lang: Lang, view: PublicView, keys: string[]): string {
  const items = keys
    .filter((k) => view.data[k] !== undefined && view.data[k] !== null && view.data[k] !== "")
    .map((k) => {
      const v = valueHtml(lang, k, view.data[k], view.fields[k]);
      return v ? `<dt>${escapeHtml(label(lang, k, view.fields[k]))}</dt><dd>${v}</dd>` : "";
    })
    .join("");
  return items ? `<dl>${items}</dl>` : "";
}

/** Which top-level keys each section shows; every public key lands in exactly one. */
export function sectionKeys(view: PublicView): Record<string, string[]> {
  const present = Object.keys(view.data).filter(
    (k) => !k.endsWith("_document_id") && !SHOWN_ELSEWHERE.has(k),
  );
  const taken = new Set<string>();
  const pick = (list: string[]) => {
    const out = list.filter((k) => present.includes(k) && !taken.has(k));
    out.forEach((k) => taken.add(k));
    return out;
  };
  const identity = pick(IDENTITY);
  const composition = pick(COMPOSITION);
  const substances = pick(SUBSTANCES);
  const care = pick(CARE);
  const environment = pick(present.filter((k) => view.fields[k]?.environmental));
  const other = pick(present);
  return { identity, composition, substances, environment, care, other };
}

export function sections(input: PageInput): Section[] {
  const { view, lang } = input;
  const t = UI[lang];
  const keys = sectionKeys(view);
  const out: Section[] = [];
  const add = (id: string, title: string, html: string) => {
    if (html) out.push({ id, title, html });
  };
  add("identity", t.identity!, fieldList(lang, view, keys.identity!));
  add("composition", t.composition!, fieldList(lang, view, keys.composition!));
  const soc = view.data.substances_of_concern;
  add(
    "substances",
    t.substances!,
    Array.isArray(soc) && soc.length === 0 && keys.substances!.length === 1
      ? `<p>${escapeHtml(t.substancesNone!)}</p>`
      : fieldList(lang, view, keys.substances!),
  );
  const env = fieldList(lang, view, keys.environment!);
  add("environment", t.environment!, env && `<p class="note">${escapeHtml(t.environmentNote!)}</p>${env}`);
  add("care", t.care!, fieldList(lang, view, keys.care!));
  if (view.variants.length > 0) {
    const rows = view.variants
      .map((v) => {
        const scanned = v.gtin14 === input.variantGtin14;
        const mark = scanned ? ` <strong>(${escapeHtml(t.scanned!)})</strong>` : "";
        return `<tr id="variant-${v.gtin14}"${scanned ? ' class="scanned"' : ""}><td>${escapeHtml(v.size ?? "–")}</td><td>${escapeHtml(
          v.colour ?? "–",
        )}</td><td>${v.gtin14}${mark}</td></tr>`;
      })
      .join("");
    add(
      "variants",
      t.variants!,
      `<div class="scroll"><table><thead><tr><th scope="col">${t.size}</th><th scope="col">${t.colour}</th><th scope="col">${t.gtin}</th></tr></thead><tbody>${rows}</tbody></table></div>`,
    );
  }
  if (view.units.length > 0) {
    const rows = view.units
      .map((u) => `<tr><td>${escapeHtml(u.serial)}</td><td>${escapeHtml(u.status ?? "–")}</td></tr>`)
      .join("");
    add(
      "units",
      t.units!,
      `<div class="scroll"><table><thead><tr><th scope="col">${t.serial}</th><th scope="col">${t.status}</th></tr></thead><tbody>${rows}</tbody></table></div>`,
    );
  }
  const base = input.previewToken
    ? `/p/${encodeURIComponent(view.id)}/preview/documents/`
    : `/p/${encodeURIComponent(view.id)}/documents/`;
  const tokenQuery = input.previewToken ? `?token=${encodeURIComponent(input.previewToken)}` : "";
  const photos = view.documents.filter((d) => d.mimeType.startsWith("image/"));
  const files = view.documents.filter((d) => !d.mimeType.startsWith("image/"));
  if (photos.length > 0)
    add(
      "photos",
      t.photos!,
      `<ul class="gallery">${photos
        .map(
          (d) =>
            `<li><figure><img src="${base}${encodeURIComponent(d.id)}${tokenQuery}" alt="${escapeHtml(`${t.photoOf}: ${d.name}`)}" loading="lazy"><figcaption>${escapeHtml(d.name)}</figcaption></figure></li>`,
        )
        .join("")}</ul>`,
    );
  if (files.length > 0)
    add(
      "documents",
      t.documents!,
      `<ul class="files">${files
        .map(
          (d) =>
            `<li><a href="${base}${encodeURIComponent(d.id)}${tokenQuery}" download>${escapeHtml(d.name)}</a> <span class="meta">(${escapeHtml(
              d.mimeType === "application/pdf" ? "PDF" : d.mimeType,
            )}, ${formatNumber(lang, Math.max(1, Math.round(d.fileSize / 1024)))} KB)</span></li>`,
        )
        .join("")}</ul>`,
    );
  add("other", t.other!, fieldList(lang, view, keys.other!));
  return out;
}

const CSS = `
*{box-sizing:border-box}
html{font-size:100%}
body{margin:0;font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;line-height:1.5;color:#1a1a1a;background:#fff}
a{color:#0a3d7a}
a:focus,a:hover{outline:3px solid #0a3d7a;outline-offset:2px}
.skip{position:absolute;left:-999px}
.skip:focus{left:8px;top:8px;background:#fff;padding:8px}
header,main,footer{max-width:48rem;margin:0 auto;padding:1rem}
header{border-bottom:1px solid #595959}
.kicker{margin:0;font-size:.95rem;color:#333}
h1{font-size:1.75rem;margin:.25rem 0}
h2{font-size:1.3rem;margin:1.75rem 0 .5rem;border-bottom:2px solid #0a3d7a;padding-bottom:.25rem}
nav.lang ul{list-style:none;padding:0;margin:.5rem 0;display:flex;gap:1rem}
nav.lang a[aria-current]{font-weight:700;text-decoration:none;color:#1a1a1a}
dl{margin:0}
dt{font-weight:700;margin-top:.75rem}
dd{margin:0 0 .25rem 0}
dl.inner dt{font-weight:600}
.text{white-space:pre-line}
.scroll{overflow-x:auto}
table{border-collapse:collapse;width:100%}
th,td{text-align:left;padding:.4rem .5rem;border-bottom:1px solid #767676;vertical-align:top}
tr.scanned{background:#fff3c4}
.preview{background:#fff3c4;border:2px solid #7a5b00;padding:.5rem .75rem}
.note{background:#eef3f9;border-left:4px solid #0a3d7a;padding:.5rem .75rem}
ul.gallery{list-style:none;padding:0;display:grid;grid-template-columns:repeat(auto-fill,minmax(9rem,1fr));gap:.75rem}
ul.gallery img{width:100%;height:auto;border:1px solid #767676}
figure{margin:0}
figcaption{font-size:.9rem}
.meta{color:#333;font-size:.9rem}
.qr img{width:10rem;height:10rem}
footer{border-top:1px solid #595959;font-size:.9rem;color:#333}
`;

function langSwitch(input: PageInput): string {
  const items = LANGUAGES.map((l) => {
    const q = new URLSearchParams(input.query);
    q.set("lang", l);
    const name = l === "en" ? "English" : "Français";
    const current = l === input.lang ? ' aria-current="true"' : "";
    return `<li><a href="${escapeHtml(`${input.path}?${q.toString()}`)}" hreflang="${l}" lang="${l}"${current}>${name}</a></li>`;
  }).join("");
  return `<nav class="lang" aria-label="${UI[input.lang].language}"><ul>${items}</ul></nav>`;
}

export function renderPage(input: PageInput): string {
  const { view, lang } = input;
  const t = UI[lang];
  const name = typeof view.data.product_name === "string" ? view.data.product_name : view.categoryName;
  const secs = sections(input);
  const toc = secs.map((s) => `<li><a href="#${s.id}">${escapeHtml(s.title)}</a></li>`).join("");
  const body = secs
    .map(
      (s) =>
        `<section id="${s.id}" aria-labelledby="h-${s.id}"><h2 id="h-${s.id}">${escapeHtml(s.title)}</h2>${s.html}</section>`,
    )
    .join("");
  const self = `/p/${encodeURIComponent(view.id)}`;
  const date = (iso: string | null) =>
    iso ? new Date(iso).toLocaleDateString(lang === "fr" ? "fr-FR" : "en-GB", { dateStyle: "long" }) : "";
  return `<!doctype html>
<html lang="${lang}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(name)} – ${escapeHtml(t.passport!)}</title>
${
  input.previewToken
    ? '<meta name="robots" content="noindex">'
    : `<link rel="alternate" type="application/ld+json" href="${self}">
<link rel="alternate" type="application/json" href="${self}">
${LANGUAGES.map((l) => `<link rel="alternate" hreflang="${l}" href="${self}?lang=${l}">`).join("\n")}`
}
<style>${CSS}</style>
</head>
<body>
<a class="skip" href="#main">${escapeHtml(t.skip!)}</a>
<header>
<p class="kicker">${escapeHtml(t.passport!)} · ${escapeHtml(view.categoryName)}</p>
${langSwitch(input)}
</header>
<main id="main">
${input.previewToken ? `<p class="preview" role="status"><strong>${escapeHtml(t.previewBanner!)}</strong></p>` : ""}
<h1>${escapeHtml(name)}</h1>
<p class="meta">${escapeHtml(t.published!)} ${escapeHtml(date(view.publishedAt))} · ${escapeHtml(t.updated!)} ${escapeHtml(date(view.updatedAt))}</p>
<nav aria-label="${escapeHtml(t.passport!)}"><ul>${toc}</ul></nav>
${body}
${
  input.previewToken
    ? ""
    : `<section id="qr" aria-labelledby="h-qr" class="qr"><h2 id="h-qr">${escapeHtml(t.qr!)}</h2><img src="${self}/qr.svg" alt="${escapeHtml(`${t.qr}: ${view.qrTarget}`)}"></section>`
}
</main>
<footer><p>${escapeHtml(t.footer!)}</p></footer>
</body>
</html>
`;
}

/** The 403 page of a preview link that is not valid (expired, altered, for another passport). */
export function renderPreviewRefused(lang: Lang): string {
  const t = UI[lang];
  return `<!doctype html>
<html lang="${lang}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<title>${escapeHtml(t.previewInvalidTitle!)}</title>
<style>${CSS}</style>
</head>
<body>
<main id="main">
<h1>${escapeHtml(t.previewInvalidTitle!)}</h1>
<p>${escapeHtml(t.previewInvalidText!)}</p>
</main>
</body>
</html>
`;
}

/** The helpful 404 page of an unknown, unpublished or test identifier. */
export function renderNotFound(lang: Lang, detail?: string): string {
  const t = UI[lang];
  return `<!doctype html>
<html lang="${lang}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(t.notFoundTitle!)}</title>
<style>${CSS}</style>
</head>
<body>
<main id="main">
<h1>${escapeHtml(t.notFoundTitle!)}</h1>
<p>${escapeHtml(t.notFoundText!)}</p>
${detail ? `<p>${escapeHtml(detail)}</p>` : ""}
<p>${escapeHtml(t.notFoundMaker!)}</p>
</main>
</body>
</html>
`;
}

/** The 400 page of a malformed Digital Link. */
export function renderBadRequest(message: string): string {
  return `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>Malformed GS1 Digital Link</title><style>${CSS}</style></head>
<body><main id="main"><h1>Malformed GS1 Digital Link</h1><p>${escapeHtml(message)}</p>
<p>A GS1 Digital Link looks like /01/&lt;GTIN&gt;, /01/&lt;GTIN&gt;/10/&lt;batch&gt; or /01/&lt;GTIN&gt;/21/&lt;serial&gt;.</p></main></body>
</html>
`;
}
