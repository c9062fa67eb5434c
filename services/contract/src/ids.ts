import { randomBytes } from "node:crypto";

const CROCKFORD = "0123456789abcdefghjkmnpqrstvwxyz";
const CROCKFORD_CODES = Buffer.from(CROCKFORD, "latin1");

/**
 * Random bytes from the system's CSPRNG, drawn 4 KiB at a time: one call into OpenSSL per 256 ids rather than one
 * per id (a call and a Buffer of its own cost about as much as the rest of `newId`). Each draw is a new buffer,
 * never refilled in place, so bytes handed out are never handed out again. Not for secrets that must not sit in
 * memory before use (API keys draw their own bytes).
 */
const POOL_BYTES = 4096;
let pool = Buffer.alloc(0);
let poolAt = 0;

/** The offset in `pool` of `n` fresh random bytes (n ≤ POOL_BYTES). */
function takeRandom(n: number): number {
  if (poolAt + n > pool.length) {
    pool = randomBytes(POOL_BYTES);
    poolAt = 0;
  }
  const at = poolAt;
  poolAt += n;
  return at;
}

/** `n` random bytes as lowercase hex (2n characters), from the same pool as `newId`. */
export function randomHex(n: number): string {
  const at = takeRandom(n);
  return pool.toString("hex", at, at + n);
}

/** The id's 26 characters are written here, then read back as one string. */
const scratch = Buffer.alloc(26);
/** The last id's time and its 16 random digits (0..31): ids made in the same millisecond count up from it. */
let lastTime = -1;
const lastRandom = new Uint8Array(16);

/**
 * A sortable opaque identifier: `<prefix>_<10 chars of time><16 random chars>`.
 * Lexical order follows creation order within a process: time at millisecond resolution, and ids made in the
 * same millisecond (or while the clock stepped back by less than a second) take the previous id's random part plus a
 * random step, so rows a
 * process inserts in a batch list in the order it made them. Keyset pagination uses this as a stable order.
 * Clients must treat identifiers as opaque.
 */
export function newId(prefix: string, now = Date.now()): string {
  if (now <= lastTime && lastTime - now < 1000) {
    // Same millisecond: add a random 1..2^24 to the 80-bit random part (base 32, carrying), so the next id is
    // later and still not guessable from this one; an overflow (odds about 2^-56) moves to the next millisecond.
    const at = takeRandom(3);
    let add = 1 + pool[at]! + (pool[at + 1]! << 8) + (pool[at + 2]! << 16);
    for (let i = 15; i >= 0 && add > 0; i--) {
      const d = lastRandom[i]! + add;
      lastRandom[i] = d % 32;
      add = Math.floor(d / 32);
    }
    if (add > 0) lastTime += 1;
  } else {
    lastTime = now;
    const at = takeRandom(16);
    // 5 bits of each byte: 256 is a multiple of 32, so every character is equally likely.
    for (let i = 0; i < 16; i++) lastRandom[i] = pool[at + i]! % 32;
  }
  let t = lastTime;
  for (let i = 9; i >= 0; i--) {
    scratch[i] = CROCKFORD_CODES[t % 32]!;
    t = Math.floor(t / 32);
  }
  for (let i = 0; i < 16; i++) scratch[10 + i] = CROCKFORD_CODES[lastRandom[i]!]!;
  return `${prefix}_${scratch.toString("latin1", 0, 26)}`;
}

/** RFC 3339 UTC with millisecond precision, the form every timestamp takes. */
export function isoTime(d: Date | string | number): string {
  return new Date(d).toISOString();
}
