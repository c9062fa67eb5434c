/**
 * Detection of environmental claims in a passport, for the `environmental_claim_detected` publish warning.
 *
 * Two sources:
 * - wording: vague, generic environmental claims in any string value of `data`, in English and French. The lists
 *   follow the examples of generic claims in Directive (EU) 2024/825 (empowering consumers for the green
 *   transition, recital 9 and Annex I point 4a) and the terms French law restricts on products (loi AGEC
 *   n° 2020-105 art. 13: "biodégradable", "respectueux de l'environnement"; loi Climat et résilience art. 12:
 *   carbon neutrality claims). Matching is case- and accent-insensitive, on whole words, with a space or a hyphen
 *   accepted between the words of a term.
 * - fields the category marks `x-environmental` (carbon footprint, recycled content, certifications ...): a filled
 *   one is environmental information the brand must be able to substantiate.
 *
 * A warning never blocks publishing. Pure: no I/O.
 */
import { environmentalFields } from "./categories";
import { escapePointerToken } from "./validate";

const ENGLISH_TERMS = [
  "eco friendly",
  "eco",
  "ecological",
  "ecologically friendly",
  "environmentally friendly",
  "environment friendly",
  "environmentally correct",
  "environmentally safe",
  "kind to the environment",
  "gentle on the environment",
  "planet friendly",
  "earth friendly",
  "nature friendly",
  "nature's friend",
  "green",
  "greener",
  "sustainable",
  "sustainably",
  "climate neutral",
  "climate friendly",
  "climate positive",
  "carbon neutral",
  "carbon friendly",
  "carbon free",
  "co2 neutral",
  "net zero",
  "zero emissions",
  "biodegradable",
  "compostable",
  "conscious",
];

const FRENCH_TERMS = [
  "respectueux de l'environnement",
  "respectueuse de l'environnement",
  "respectueux de la planete",
  "respectueuse de la planete",
  "bon pour la planete",
  "ami de la planete",
  "ecologique",
  "eco responsable",
  "ecoresponsable",
  "eco concu",
  "eco concue",
  "ecoconcu",
  "ecoconcue",
  "biodegradable",
  "neutre en carbone",
  "neutre pour le climat",
  "neutralite carbone",
  "zero carbone",
  "zero emission",
  "mode durable",
  "developpement durable",
  "vert et durable",
];

/** Lower case, accents removed, typographic apostrophes made plain. Same length per code point is not kept. */
export function foldText(text: string): string {
  return text
    .normalize("NFD")
    .replace(/\p{M}+/gu, "")
    .replace(/[\u2018\u2019\u02bc`´]/g, "'")
    .toLowerCase();
}

function termPattern(term: string): string {
  return term
    .split(/[\s-]+/)
    .map((w) => w.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"))
    .join("[\\s-]+");
}

const TERMS = [...new Set([...ENGLISH_TERMS, ...FRENCH_TERMS])].sort((a, b) => b.length - a.length);
const CLAIM_RE = new RegExp(
  `(?<![\\p{L}\\p{N}])(?:${TERMS.map(termPattern).join("|")})(?![\\p{L}\\p{N}])`,
  "gu",
);

/** The claim terms found in a text (folded form, in order of appearance, each once). */
export function findClaimTerms(text: string): string[] {
  const found = new Set<string>();
  for (const m of foldText(text).matchAll(CLAIM_RE)) found.add(m[0].replace(/[\s-]+/g, " "));
  return [...found];
}

export interface EnvironmentalFinding {
  /** JSON Pointer under /data. */
  pointer: string;
  kind: "wording" | "environmental_field";
  /** The claim terms found (wording only). */
  terms: string[];
}

function isFilled(value: unknown): boolean {
  if (value === undefined || value === null) return false;
  if (typeof value === "string") return value.trim() !== "";
  if (Array.isArray(value)) return value.length > 0;
  if (typeof value === "object") return Object.keys(value).length > 0;
  return true;
}

function walk(value: unknown, pointer: string, out: EnvironmentalFinding[]): void {
  if (typeof value === "string") {
    const terms = findClaimTerms(value);
    if (terms.length) out.push({ pointer, kind: "wording", terms });
  } else if (Array.isArray(value)) {
    value.forEach((v, i) => walk(v, `${pointer}/${i}`, out));
  } else if (value !== null && typeof value === "object") {
    for (const [k, v] of Object.entries(value)) walk(v, `${pointer}/${escapePointerToken(k)}`, out);
  }
}

/** Every environmental claim in a passport's data: filled x-environmental fields, then wording, by pointer. */
export function detectEnvironmentalClaims(
  category: string,
  data: Record<string, unknown>,
): EnvironmentalFinding[] {
  const out: EnvironmentalFinding[] = [];
  for (const field of environmentalFields(category))
    if (isFilled(data[field]))
      out.push({ pointer: `/data/${escapePointerToken(field)}`, kind: "environmental_field", terms: [] });
  walk(data, "/data", out);
  return out;
}

export function findingMessage(f: EnvironmentalFinding): string {
  return f.kind === "wording"
    ? `Environmental claim wording (${f.terms.map((t) => `"${t}"`).join(", ")}) at ${f.pointer}: generic claims must be substantiated (Directive (EU) 2024/825; in France some are prohibited on products, loi AGEC art. 13).`
    : `${f.pointer} is environmental information: it must be accurate, substantiated and verifiable.`;
}
