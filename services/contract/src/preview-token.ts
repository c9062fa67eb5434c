/**
 * The token of a passport's preview_url (docs/decisions/0059-public-surface.md): what lets the organization's own
 * people see a draft or a test passport on the public surface, which takes no API key. Passport signs it when it
 * reports the links (to a caller holding the passport's read scope); the public surface checks it. HMAC-SHA256
 * with a secret both hold (PREVIEW_SIGNING_SECRET), over the passport, its organization and mode and an expiry:
 * a bearer link that ends, not a credential of the API.
 */
import { createHmac, timingSafeEqual } from "node:crypto";

export interface PreviewSubject {
  passportId: string;
  organizationId: string;
  livemode: boolean;
}

/** How long a preview link lives: until the end of the next full hour (so it is stable within an hour). */
export function previewExpiry(nowMs: number): number {
  const hour = 3_600_000;
  return Math.floor(nowMs / hour) * hour + 2 * hour;
}

function mac(secret: string, s: PreviewSubject, expSeconds: number): string {
  return createHmac("sha256", secret)
    .update(
      `dpp-preview:v1:${s.passportId}:${s.organizationId}:${s.livemode ? "live" : "test"}:${expSeconds}`,
    )
    .digest("base64url");
}

/** `<organization>.<live|test>.<expiry, Unix seconds>.<signature>` */
export function signPreviewToken(secret: string, s: PreviewSubject, expiresAtMs: number): string {
  const exp = Math.floor(expiresAtMs / 1000);
  return `${s.organizationId}.${s.livemode ? "live" : "test"}.${exp}.${mac(secret, s, exp)}`;
}

/** The organization and mode a token grants a preview of `passportId` in, or null (tampered, expired, malformed). */
export function verifyPreviewToken(
  secret: string,
  passportId: string,
  token: string,
  nowMs: number,
): { organizationId: string; livemode: boolean } | null {
  if (!secret) return null;
  const m = /^([A-Za-z0-9_]{1,64})\.(live|test)\.(\d{1,12})\.([A-Za-z0-9_-]{43})$/.exec(token);
  if (!m) return null;
  const subject = { passportId, organizationId: m[1]!, livemode: m[2] === "live" };
  const exp = Number(m[3]);
  if (exp * 1000 <= nowMs) return null;
  const want = Buffer.from(mac(secret, subject, exp));
  const got = Buffer.from(m[4]!);
  if (want.length !== got.length || !timingSafeEqual(want, got)) return null;
  return { organizationId: subject.organizationId, livemode: subject.livemode };
}
