/**
 * RFC 7386 JSON Merge Patch: an omitted key is unchanged, null removes a key, any non-object value (arrays
 * included) replaces the target whole. Never mutates its inputs.
 */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

function isObject(v: unknown): v is Record<string, Json> {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

export function applyMergePatch(target: Json | undefined, patch: Json): Json {
  if (!isObject(patch)) return patch;
  const out: Record<string, Json> = isObject(target) ? { ...target } : {};
  for (const key of Object.keys(patch)) {
    const value = patch[key] as Json;
    if (value === null) {
      delete out[key];
    } else {
      const merged = applyMergePatch(
        Object.prototype.hasOwnProperty.call(out, key) ? out[key] : undefined,
        value,
      );
      // defineProperty: a "__proto__" key from JSON.parse stays an own data key instead of setting the prototype.
      Object.defineProperty(out, key, {
        value: merged,
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
  }
  return out;
}

/** Structural equality of JSON values; object key order does not matter. */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a))
    return Array.isArray(b) && a.length === b.length && a.every((v, i) => jsonEqual(v, b[i]));
  if (isObject(a) && isObject(b)) {
    const ka = Object.keys(a);
    if (ka.length !== Object.keys(b).length) return false;
    return ka.every((k) => Object.prototype.hasOwnProperty.call(b, k) && jsonEqual(a[k], b[k]));
  }
  return false;
}
