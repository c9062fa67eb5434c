/**
 * GS1 Digital Link URIs as the resolver reads them, and the linkset it answers (GS1-Conformant Resolver standard
 * 1.2, RFC 9264, GS1's linkset JSON schema; the rules are summarised in docs/decisions/0059-public-surface.md).
 * Pure: no I/O.
 */
import { normalizeGtin } from "@dpp/contract";

export const GS1_VOC = "https://gs1.org/voc/";
export const LINKSET_MEDIA_TYPE = "application/linkset+json";
export const LINKSET_CONTEXT = "https://ref.gs1.org/standards/resolver/linkset-context";

/** A parsed Digital Link path: the GTIN (14 digits) and the qualifiers this resolver knows. */
export interface DigitalLink {
  gtin14: string;
  /** AI 22 (consumer product variant), accepted and not used: it resolves as the GTIN. */
  cpv?: string;
  /** AI 10 (batch or lot). */
  batch?: string;
  /** AI 21 (serial number). */
  serial?: string;
}

export class MalformedLink extends Error {}

/** GS1 AI encodable character set 82 (GS1 General Specifications 7.11, figure 7.11-1), 1 to 20 characters. */
const CSET82 = /^[!"%&'()*+,\-./0-9:;<=>?A-Z_a-z]{1,20}$/;
/** Qualifiers of a GTIN in the order the Digital Link standard requires (22, then 10, then 21). */
const QUALIFIERS = ["22", "10", "21"] as const;

/** Percent-encoding of an AI value in a path segment (RFC 3986 unreserved characters kept), as passport's. */
export function encodeAiValue(value: string): string {
  return encodeURIComponent(value).replace(
    /[!'()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
}

/**
 * Reads `/01/<gtin>[/22/<cpv>][/10/<batch>][/21/<serial>]` (a trailing slash tolerated). A GTIN of 8, 12, 13 or 14
 * digits is normalised to 14 with its check digit verified. Anything else throws MalformedLink (a 400), with a
 * sentence saying what is wrong.
 */
export function parseDigitalLink(pathname: string): DigitalLink {
  const segments = pathname.replace(/\/$/, "").split("/").slice(1);
  if (segments[0] !== "01" || segments.length < 2)
    throw new MalformedLink("A GS1 Digital Link path starts with /01/ followed by a GTIN.");
  if (segments.length % 2 !== 0)
    throw new MalformedLink("Each application identifier in the path must be followed by its value.");
  const gtinText = decode(segments[1]!);
  if (!/^(\d{8}|\d{12}|\d{13}|\d{14})$/.test(gtinText))
    throw new MalformedLink(`"${gtinText}" is not a GTIN: a GTIN has 8, 12, 13 or 14 digits.`);
  const gtin14 = normalizeGtin(gtinText);
  if (!gtin14) throw new MalformedLink(`The check digit of GTIN ${gtinText} is wrong.`);
  const link: DigitalLink = { gtin14 };
  let last = -1;
  for (let i = 2; i < segments.length; i += 2) {
    const ai = segments[i]!;
    const at = (QUALIFIERS as readonly string[]).indexOf(ai);
    if (at < 0)
      throw new MalformedLink(
        `Application identifier ${ai} is not a qualifier of a GTIN here (22, 10 and 21 are).`,
      );
    if (at <= last)
      throw new MalformedLink("Qualifiers of a GTIN come in the order 22, 10, 21, each at most once.");
    last = at;
    const value = decode(segments[i + 1]!);
    if (!CSET82.test(value))
      throw new MalformedLink(
        `The value of AI ${ai} must be 1 to 20 characters of GS1's character set 82, got "${value}".`,
      );
    if (ai === "22") link.cpv = value;
    else if (ai === "10") link.batch = value;
    else link.serial = value;
  }
  return link;
}

function decode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new MalformedLink("The path holds a malformed percent-encoding.");
  }
}

/** The canonical URI of a link on this resolver (GTIN-14, qualifiers in order, values percent-encoded). */
export function canonicalUri(resolverBaseUrl: string, l: DigitalLink): string {
  let uri = `${resolverBaseUrl}/01/${l.gtin14}`;
  if (l.cpv !== undefined) uri += `/22/${encodeAiValue(l.cpv)}`;
  if (l.batch !== undefined) uri += `/10/${encodeAiValue(l.batch)}`;
  if (l.serial !== undefined) uri += `/21/${encodeAiValue(l.serial)}`;
  return uri;
}

/** A `?linkType=` value as a full GS1 vocabulary URI: `gs1:pip`, `pip` and `https://gs1.org/voc/pip` alike. */
export function linkTypeUri(value: string): string {
  if (value.startsWith(GS1_VOC)) return value;
  if (value.startsWith("gs1:")) return GS1_VOC + value.slice(4);
  return GS1_VOC + value;
}

/** One link target of RFC 9264's JSON form, as GS1's schema wants it. */
export interface LinkTarget {
  href: string;
  title: string;
  type?: string;
  hreflang?: string[];
}

/** The links of one item: link type (full URI) -> targets. The default link is one of them. */
export type LinkMap = Record<string, LinkTarget[]>;

/** RFC 9264's JSON form: one item, its anchor and description, and its links by type. */
export interface Linkset {
  linkset: Array<Record<string, string | LinkTarget[]>>;
}

export function linkset(anchor: string, itemDescription: string, links: LinkMap): Linkset {
  return { linkset: [{ anchor, itemDescription, ...links }] };
}

/** The one link the resolver redirects to when nothing else is asked. */
export function defaultLink(links: LinkMap): LinkTarget {
  return links[`${GS1_VOC}defaultLink`]![0]!;
}

/**
 * The target of a redirect: the link's href with the request's own query string passed on (its linkType
 * excepted), as the standard asks.
 */
export function redirectTarget(href: string, query: URLSearchParams): string {
  const passed = [...query].filter(([k]) => k !== "linkType");
  if (passed.length === 0) return href;
  const u = new URL(href);
  for (const [k, v] of passed) if (!u.searchParams.has(k)) u.searchParams.append(k, v);
  return u.toString();
}

/** The Link header of every resolver answer: where the item's linkset is. */
export function linksetLinkHeader(canonical: string, withContext = false): string {
  const parts = [`<${canonical}?linkType=linkset>; rel="linkset"; type="${LINKSET_MEDIA_TYPE}"`];
  if (withContext)
    parts.push(
      `<${LINKSET_CONTEXT}>; rel="http://www.w3.org/ns/json-ld#context"; type="application/ld+json"`,
    );
  return parts.join(", ");
}
