/**
 * Public links of a passport: the public page, what the QR code encodes, a preview, and the GS1 Digital Link
 * (https://<resolver host>/01/<gtin14>[/21/<serial>], GS1 Digital Link URI syntax 1.x; the linkset is asked for
 * with ?linkType=linkset as the GS1-Conformant Resolver standard requires). Pure: hosts come from configuration.
 */
import { normalizeGtin, previewExpiry, signPreviewToken } from "@dpp/contract";
import { PUBLIC_STATUSES } from "./lifecycle";

export interface LinkHosts {
  /** Base of the hosted public passport pages, without a trailing slash. */
  publicBaseUrl: string;
  /** Base of the GS1 Digital Link resolver, without a trailing slash. */
  resolverBaseUrl: string;
  /**
   * Signs preview_url's token (shared with the public surface, docs/decisions/0059-public-surface.md); empty: the
   * preview_url carries no token and the public surface refuses it.
   */
  previewSecret?: string;
  /** The clock of the token's expiry (tests). */
  now?: () => number;
}

export interface LinkSubject {
  id: string;
  organization_id: string;
  status: string;
  livemode: boolean;
  gtin: string | null;
  serial_number: string | null;
}

export interface Gs1DigitalLink {
  uri: string | null;
  gtin14: string | null;
  serial: string | null;
  linkset_url: string | null;
  unavailable_reason: "gtin_missing" | "gtin_invalid" | null;
}

export interface Links {
  public_url: string;
  qr_target: string;
  preview_url: string | null;
  resolves_publicly: boolean;
  not_resolvable_reason: "test_mode" | "not_published" | null;
  gs1_digital_link: Gs1DigitalLink;
}

/**
 * GS1 restricted circulation numbers (GTIN-13 prefixes 02, 04 and 2, i.e. GTIN-14 prefixes 002, 004 and 02):
 * valid in a store or a company, not globally unique, so no GS1 Digital Link may carry them.
 */
export function isRestrictedCirculation(gtin14: string): boolean {
  return /^(002|004|02)/.test(gtin14) && !/^0{6}/.test(gtin14);
}

/** Percent-encoding of a GS1 AI value in a Digital Link path segment (RFC 3986 unreserved characters kept). */
export function encodeAiValue(value: string): string {
  return encodeURIComponent(value).replace(
    /[!'()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
}

/** GS1 AI encodable character set 82, 1 to 20 characters: what AI 21 (serial number) may hold. */
const AI21_VALUE = /^[!"%&'()*+,\-./0-9:;<=>?A-Z_a-z]{1,20}$/;

export function gs1DigitalLink(
  gtin: string | null,
  serial: string | null,
  resolverBaseUrl: string,
): Gs1DigitalLink {
  if (!gtin)
    return { uri: null, gtin14: null, serial: null, linkset_url: null, unavailable_reason: "gtin_missing" };
  const gtin14 = normalizeGtin(gtin);
  if (!gtin14 || isRestrictedCirculation(gtin14))
    return { uri: null, gtin14: null, serial: null, linkset_url: null, unavailable_reason: "gtin_invalid" };
  // A serial that AI 21 cannot carry (GS1 character set 82, 1 to 20 characters) leaves the link at GTIN level,
  // which resolves to the same passport: the resolver refuses such a serial as malformed.
  const ser = serial && AI21_VALUE.test(serial) ? serial : null;
  const uri = `${resolverBaseUrl}/01/${gtin14}${ser ? `/21/${encodeAiValue(ser)}` : ""}`;
  return {
    uri,
    gtin14,
    serial: ser,
    linkset_url: `${uri}?linkType=linkset`,
    unavailable_reason: null,
  };
}

export function passportLinks(p: LinkSubject, hosts: LinkHosts): Links {
  const publicUrl = `${hosts.publicBaseUrl}/p/${encodeURIComponent(p.id)}`;
  const dl = gs1DigitalLink(p.gtin, p.serial_number, hosts.resolverBaseUrl);
  const online = (PUBLIC_STATUSES as readonly string[]).includes(p.status);
  const reason = !p.livemode ? "test_mode" : online ? null : "not_published";
  return {
    public_url: publicUrl,
    // The QR carries the GS1 Digital Link when there is one (the resolver sends a browser to the public page),
    // so the same code also works at a till; otherwise the public page itself.
    qr_target: dl.uri ?? publicUrl,
    // What the page shows (or will show), for the organization's own people: a link signed for this passport
    // that ends within two hours, handed only to a caller who may read the passport; none for a trashed one.
    preview_url: reason !== null && p.status !== "trashed" ? previewUrl(p, publicUrl, hosts) : null,
    resolves_publicly: reason === null,
    not_resolvable_reason: reason,
    gs1_digital_link: dl,
  };
}

function previewUrl(p: LinkSubject, publicUrl: string, hosts: LinkHosts): string {
  if (!hosts.previewSecret) return `${publicUrl}/preview`;
  const token = signPreviewToken(
    hosts.previewSecret,
    { passportId: p.id, organizationId: p.organization_id, livemode: p.livemode },
    previewExpiry((hosts.now ?? Date.now)()),
  );
  return `${publicUrl}/preview?token=${token}`;
}
