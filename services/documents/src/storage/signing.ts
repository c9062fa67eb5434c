/** HMAC-SHA256 signatures of the filesystem store's URLs: the signature is the credential, and it expires. */
import { createHmac, timingSafeEqual } from "node:crypto";

export function sign(secret: string, parts: readonly (string | number)[]): string {
  return createHmac("sha256", secret).update(parts.join("\n")).digest("base64url");
}

export function signatureMatches(
  secret: string,
  parts: readonly (string | number)[],
  given: string,
): boolean {
  const want = Buffer.from(sign(secret, parts));
  const got = Buffer.from(given);
  return want.length === got.length && timingSafeEqual(want, got);
}
