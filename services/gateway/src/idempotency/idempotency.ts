/**
 * The gateway's part of idempotency (docs/decisions/0018-idempotency-with-the-write.md): for every route the
 * table marks `idempotent` (the spec's "accepted") it checks the Idempotency-Key's syntax and fingerprints
 * the request (method, path, canonical body). Key, fingerprint and scope (organization in the path, mode,
 * calling key's organization) travel in the request context to the owning service, which records the
 * result in the same transaction as the write (@dpp/kit idempotency.ts): the scope signed, the key and
 * fingerprint beside the signed token (docs/decisions/0031-keyed-writes-reuse-tokens.md). Every key this
 * accepts is a valid gRPC metadata value (printable ASCII; HTTP/1 strips surrounding spaces).
 */
import { hash } from "node:crypto";
import { invalidParameter } from "@dpp/contract";

export const IDEMPOTENCY_HEADER = "idempotency-key";
const MAX_KEY_LENGTH = 255;

/**
 * The Idempotency-Key header, checked: 1 to 255 printable ASCII characters
 * (0x20-0x7E), sent once. Undefined when absent. A malformed header is a 400
 * that claims nothing, so the client fixes it and retries with the same key.
 */
export function readIdempotencyKey(header: string | string[] | undefined): string | undefined {
  if (header === undefined) return undefined;
  const bad = (rule: string, message: string) => {
    const e = invalidParameter("Idempotency-Key", rule, message);
    e.details.issues = [{ source: { header: "Idempotency-Key" }, rule, message }];
    return e;
  };
  if (Array.isArray(header)) throw bad("single_value", "Send the Idempotency-Key header once.");
  if (header.length === 0 || header.length > MAX_KEY_LENGTH)
    throw bad("length", `The Idempotency-Key must be 1 to ${MAX_KEY_LENGTH} characters long.`);
  if (!/^[\x20-\x7e]+$/.test(header))
    throw bad("printable_ascii", "The Idempotency-Key may contain printable ASCII characters only.");
  return header;
}

/**
 * JSON with object keys sorted, so the same document always gives the same text. Its text is part of every recorded
 * fingerprint (a retry within 24 h compares with it): a change to it makes those retries conflicts. Built in one
 * pass, without an intermediate array per object.
 */
export function canonicalJson(v: unknown): string {
  if (v === null || typeof v !== "object") return JSON.stringify(v) ?? "null";
  if (Array.isArray(v)) {
    let out = "[";
    for (let i = 0; i < v.length; i++) out += (i === 0 ? "" : ",") + canonicalJson(v[i]);
    return out + "]";
  }
  const o = v as Record<string, unknown>;
  let out = "{";
  let first = true;
  for (const k of Object.keys(o).sort()) {
    const member = o[k];
    if (member === undefined) continue;
    out += (first ? "" : ",") + JSON.stringify(k) + ":" + canonicalJson(member);
    first = false;
  }
  return out + "}";
}

/** SHA-256 over method, path and canonical body (no body and `{}` differ). */
export function fingerprintOf(method: string, path: string, body: unknown): string {
  return hash(
    "sha256",
    `${method.toUpperCase()}\n${path}\n${body === undefined ? "" : canonicalJson(body)}`,
    "hex",
  );
}
