/**
 * API key text: `dpp_sk_<mode>_<32 base62 chars: ~190 random bits><6-char checksum>`.
 * The checksum lets the gateway refuse a mistyped or truncated key without a
 * store lookup. Only the SHA-256 digest and the last 4 characters are stored.
 */
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import { SERVICE_SCOPES } from "../../scopes.generated";

const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const BODY_LENGTH = 32;
const CHECKSUM_LENGTH = 6;
const KEY_RE = new RegExp(
  `^dpp_sk_(test|live)_([0-9A-Za-z]{${BODY_LENGTH}})([0-9A-Za-z]{${CHECKSUM_LENGTH}})$`,
);

/**
 * The fixed scopes a key can carry: the spec's, then those the services' own operations declare
 * (services/<name>/openapi.yaml security; scopes.generated.ts).
 */
export const SCOPES = [
  "passports:read",
  "passports:write",
  "documents:read",
  "documents:write",
  "units:read",
  "units:write",
  "events:read",
  "filings:write",
  "keys:admin",
  ...SERVICE_SCOPES,
] as const;
export type Scope = (typeof SCOPES)[number];

export function isScope(s: string): s is Scope {
  return (SCOPES as readonly string[]).includes(s);
}

/** A write scope also allows the matching read scope. */
export function scopeAllows(held: readonly string[], needed: Scope): boolean {
  if (held.includes(needed)) return true;
  const [resource, action] = needed.split(":");
  return action === "read" && held.includes(`${resource}:write`);
}

export function base62(bytes: Buffer, length: number): string {
  let n = BigInt(`0x${bytes.toString("hex")}`);
  let out = "";
  for (let i = 0; i < length; i++) {
    out = BASE62[Number(n % 62n)] + out;
    n /= 62n;
  }
  return out;
}

export function checksum(prefixAndBody: string): string {
  return base62(createHash("sha256").update(prefixAndBody).digest().subarray(0, 8), CHECKSUM_LENGTH);
}

export function generateKeyText(livemode: boolean): string {
  const prefix = `dpp_sk_${livemode ? "live" : "test"}_`;
  // 24 random bytes = 192 bits; 32 base62 digits hold 190.5 bits, so the body keeps >= 190 random bits.
  const body = base62(randomBytes(24), BODY_LENGTH);
  return `${prefix}${body}${checksum(prefix + body)}`;
}

export interface ParsedKey {
  livemode: boolean;
  digest: string;
  last4: string;
}

/**
 * Parses key text; undefined when the format or the checksum is wrong. `issued(digest)` may vouch for a digest
 * known to belong to a key already checked (the key cache's): the text of an issued key has a valid checksum,
 * so it is not computed again.
 */
export function parseKeyText(text: string, issued?: (digest: string) => boolean): ParsedKey | undefined {
  const m = KEY_RE.exec(text);
  if (!m) return undefined;
  const [, mode, body, sum] = m;
  const digest = digestOf(text);
  if (!issued?.(digest) && checksum(`dpp_sk_${mode}_${body}`) !== sum) return undefined;
  return { livemode: mode === "live", digest, last4: text.slice(-4) };
}

export function digestOf(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}

/** Constant-time comparison of two hex digests. */
export function digestsEqual(a: string, b: string): boolean {
  const x = Buffer.from(a, "hex");
  const y = Buffer.from(b, "hex");
  return x.length === y.length && timingSafeEqual(x, y);
}
