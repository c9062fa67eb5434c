/** The rules of an endpoint's fields (no I/O; the address check at creation is in ../rpc with the resolver). */
import { isCatalogued, validationFailed, type Issue } from "@dpp/contract";
import { isIP } from "node:net";

export const URL_MAX_LENGTH = 2048;
export const DESCRIPTION_MAX_LENGTH = 500;
export const TYPES_MAX = 50;
/** Longest overlap of a rotation: 7 days. */
export const OVERLAP_MAX_SECONDS = 7 * 24 * 3600;
export const OVERLAP_DEFAULT_SECONDS = 24 * 3600;

/** The URL as given, checked for its form: https in live mode (http also in test mode), no credentials, no fragment. */
export function checkUrl(raw: string, livemode: boolean, issues: Issue[], pointer = "/url"): URL | undefined {
  const fail = (rule: string, message: string) => {
    issues.push({ source: { pointer }, rule, message });
    return undefined;
  };
  if (raw.length === 0) return fail("required", "url is required.");
  if (raw.length > URL_MAX_LENGTH) return fail("max_length", `url is at most ${URL_MAX_LENGTH} characters.`);
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    return fail("url_format", "url must be an absolute URL.");
  }
  if (u.protocol !== "https:" && !(u.protocol === "http:" && !livemode))
    return fail(
      "https_required",
      livemode ? "A live-mode url must use https." : "url must use https (or http in test mode).",
    );
  if (u.username || u.password) return fail("url_credentials", "url must not carry a user name or password.");
  if (u.hash) return fail("url_format", "url must not have a fragment.");
  return u;
}

/** The host to resolve: an IP literal unbracketed, or the name. */
export function hostOf(u: URL): { host: string; literal: boolean } {
  const host = u.hostname.startsWith("[") ? u.hostname.slice(1, -1) : u.hostname;
  return { host, literal: isIP(host) !== 0 };
}

export function checkDescription(raw: string, issues: Issue[]): string {
  const d = raw.trim();
  if (d.length > DESCRIPTION_MAX_LENGTH)
    issues.push({
      source: { pointer: "/description" },
      rule: "max_length",
      message: `description is at most ${DESCRIPTION_MAX_LENGTH} characters.`,
    });
  return d;
}

/** Unique, sorted; each a catalogued type. Empty: every type. */
export function checkTypes(raw: readonly string[], issues: Issue[]): string[] {
  if (raw.length > TYPES_MAX)
    issues.push({ source: { pointer: "/types" }, rule: "max_items", message: `At most ${TYPES_MAX} types.` });
  raw.forEach((t, i) => {
    if (!isCatalogued(t))
      issues.push({
        source: { pointer: `/types/${i}` },
        rule: "unknown_event_type",
        message: `${JSON.stringify(t).slice(0, 80)} is not an event type of the catalogue.`,
      });
  });
  return [...new Set(raw)].sort();
}

export function checkOverlap(seconds: number): number {
  if (!Number.isInteger(seconds) || seconds < 0 || seconds > OVERLAP_MAX_SECONDS)
    throw validationFailed([
      {
        source: { pointer: "/overlap_seconds" },
        rule: "range",
        message: `overlap_seconds is an integer from 0 to ${OVERLAP_MAX_SECONDS}.`,
      },
    ]);
  return seconds;
}
