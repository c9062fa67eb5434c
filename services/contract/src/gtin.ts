/**
 * GS1 GTIN handling (GTIN-8, GTIN-12, GTIN-13, GTIN-14).
 *
 * A GTIN is stored and compared in its 14-digit form: shorter GTINs are left-padded with zeros, which does not
 * change the check digit (the weights are counted from the right).
 */

const GTIN_SHAPE = /^(\d{8}|\d{12}|\d{13}|\d{14})$/;

/** True when `s` has the shape of a GTIN (8, 12, 13 or 14 digits), whatever its check digit. */
export function hasGtinShape(s: string): boolean {
  return GTIN_SHAPE.test(s);
}

/**
 * The GS1 mod-10 check digit for the digits that precede it (any length). Weights 3 and 1 alternate,
 * starting with 3 on the rightmost digit.
 */
export function gtinCheckDigit(digitsWithoutCheckDigit: string): number {
  if (!/^\d+$/.test(digitsWithoutCheckDigit)) throw new RangeError("gtinCheckDigit expects digits only");
  let sum = 0;
  const n = digitsWithoutCheckDigit.length;
  for (let i = 0; i < n; i++) {
    const digit = digitsWithoutCheckDigit.charCodeAt(n - 1 - i) - 48;
    sum += digit * (i % 2 === 0 ? 3 : 1);
  }
  return (10 - (sum % 10)) % 10;
}

/**
 * Returns the GTIN as 14 digits (left-padded with zeros) when `s` is exactly 8, 12, 13 or 14 ASCII digits with a
 * correct check digit; otherwise null. No trimming, no separators accepted. An all-zero GTIN is refused.
 */
export function normalizeGtin(s: string): string | null {
  if (typeof s !== "string" || !GTIN_SHAPE.test(s)) return null;
  const g = s.padStart(14, "0");
  if (/^0+$/.test(g)) return null;
  return gtinCheckDigit(g.slice(0, 13)) === g.charCodeAt(13) - 48 ? g : null;
}
