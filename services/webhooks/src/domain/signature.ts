/**
 * Standard Webhooks signing (https://www.standardwebhooks.com, spec 1.0): the secret is `whsec_` and the base64
 * of its key bytes; a signature is `v1,` and the base64 HMAC-SHA256, under the key, of `{id}.{timestamp}.{body}`;
 * the webhook-signature header carries one per secret still signing, separated by spaces.
 */
import { createHmac, randomBytes } from "node:crypto";

export const SECRET_PREFIX = "whsec_";

/** A new secret: 32 random bytes. */
export function newSecret(): string {
  return SECRET_PREFIX + randomBytes(32).toString("base64");
}

export function sign(secret: string, id: string, timestamp: number, body: string): string {
  const key = Buffer.from(secret.slice(SECRET_PREFIX.length), "base64");
  return "v1," + createHmac("sha256", key).update(`${id}.${timestamp}.${body}`).digest("base64");
}

/** The webhook-signature header: a signature per secret, the current one first. */
export function signatureHeader(
  secrets: readonly string[],
  id: string,
  timestamp: number,
  body: string,
): string {
  return secrets.map((s) => sign(s, id, timestamp, body)).join(" ");
}

/**
 * The body of a delivery: the feed's event object as its public JSON text, with `next_cursor`, the feed cursor
 * just after the event (null for a test event), added as its last member. The event's text is not re-encoded.
 */
export function deliveryBody(eventJson: string, nextCursor: string | null): string {
  const text = eventJson.trimEnd();
  if (!text.startsWith("{") || !text.endsWith("}")) throw new Error("an event's JSON is an object text");
  const empty = text.slice(1, -1).trim() === "";
  return `${text.slice(0, -1)}${empty ? "" : ","}"next_cursor":${JSON.stringify(nextCursor)}}`;
}
