import { randomBytes } from "node:crypto";

const CROCKFORD = "0123456789abcdefghjkmnpqrstvwxyz";

/**
 * A sortable opaque identifier: `<prefix>_<10 chars of time><16 random chars>`.
 * Lexical order follows creation time (millisecond resolution), which keyset
 * pagination uses as a stable order. Clients must treat identifiers as opaque.
 */
export function newId(prefix: string, now = Date.now()): string {
  let t = now;
  let time = "";
  for (let i = 0; i < 10; i++) {
    time = CROCKFORD[t % 32] + time;
    t = Math.floor(t / 32);
  }
  const bytes = randomBytes(16);
  let rand = "";
  for (const b of bytes) rand += CROCKFORD[b % 32];
  return `${prefix}_${time}${rand}`;
}

/** RFC 3339 UTC with millisecond precision, the form every timestamp takes. */
export function isoTime(d: Date | string | number): string {
  return new Date(d).toISOString();
}
