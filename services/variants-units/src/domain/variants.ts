/**
 * The rules of a passport's variants (spec: Variants; docs/decisions/0051-variants-and-units.md): the batch of
 * POST .../variants and of POST .../variants/remove, the case-insensitive size/colour pair, the review fingerprint.
 * Pure functions: the service's preflight runs them before the call's Idempotency-Key is claimed.
 */
import { createHash } from "node:crypto";
import { correctableRefusal, hasGtinShape, normalizeGtin, validationFailed, type Issue } from "@dpp/contract";

export const MAX_VARIANTS_PER_REQUEST = 1000;
export const MAX_VARIANTS_PER_PASSPORT = 2000;
export const MAX_GTINS_PER_REMOVAL = 1000;
export const LABEL_MAX_CODE_POINTS = 70;
/** Categories whose passports carry variants. */
export const VARIANT_CATEGORIES: readonly string[] = ["textile", "general"];

export interface VariantInput {
  gtin: string;
  size?: string;
  colour?: string;
}

export interface NormalizedVariant {
  gtin: string;
  size: string | null;
  colour: string | null;
  pairKey: string;
}

/** Whether `s` has more than `max` code points (a string of at most `max` UTF-16 units never has). */
function longerThan(s: string, max: number): boolean {
  if (s.length <= max) return false;
  let n = 0;
  for (const _ of s) if (++n > max) return true;
  return false;
}

/**
 * The key of a size/colour pair, compared case-insensitively (absent and present members never collide). Lower
 * case is Unicode's default case mapping, the same for every locale (`toLowerCase`, which is what
 * `toLocaleLowerCase("und")` answers too, at a fraction of its cost): keys stored before and after agree.
 */
export function pairKey(size: string | null, colour: string | null): string {
  const part = (s: string | null) => (s === null ? "-" : `=${s.toLowerCase()}`);
  return `${part(size)}\u0001${part(colour)}`;
}

/** A trimmed label, null when absent, undefined (with its issue) when refused; the pointer made only then. */
function label(
  value: string | undefined,
  index: number,
  name: "size" | "colour",
  issues: Issue[],
): string | null | undefined {
  if (value === undefined) return null;
  const t = value.trim();
  if (t.length === 0) {
    issues.push({
      source: { pointer: `/variants/${index}/${name}` },
      rule: "min_length",
      message: `${name} is empty after trimming.`,
    });
    return undefined;
  }
  if (longerThan(t, LABEL_MAX_CODE_POINTS)) {
    issues.push({
      source: { pointer: `/variants/${index}/${name}` },
      rule: "max_length",
      message: `${name} has more than ${LABEL_MAX_CODE_POINTS} characters after trimming.`,
    });
    return undefined;
  }
  return t;
}

/** The issue of a GTIN that normalizeGtin refused. */
function refusedGtin(raw: string, pointer: string): Issue {
  return hasGtinShape(raw)
    ? { source: { pointer }, rule: "gtin_check_digit", message: `GTIN ${raw} has a wrong check digit.` }
    : { source: { pointer }, rule: "gtin", message: "A GTIN has 8, 12, 13 or 14 digits." };
}

/** The GTIN's issue (undefined when it is valid). */
export function gtinIssue(raw: string, pointer: string): Issue | undefined {
  return normalizeGtin(raw) ? undefined : refusedGtin(raw, pointer);
}

/** Validates and normalises a create batch; validation_failed lists a pointer per offending item. */
export function normalizeVariantBatch(items: readonly VariantInput[]): NormalizedVariant[] {
  if (items.length < 1 || items.length > MAX_VARIANTS_PER_REQUEST)
    throw validationFailed([
      {
        source: { pointer: "/variants" },
        rule: items.length < 1 ? "min_items" : "max_items",
        message: `Send 1 to ${MAX_VARIANTS_PER_REQUEST} variants per request.`,
      },
    ]);
  const issues: Issue[] = [];
  const gtins = new Map<string, number>();
  const pairs = new Map<string, number>();
  const out = items.map((v, i) => {
    const normalized = normalizeGtin(v.gtin);
    if (!normalized) issues.push(refusedGtin(v.gtin, `/variants/${i}/gtin`));
    const gtin = normalized ?? v.gtin;
    const size = label(v.size, i, "size", issues);
    const colour = label(v.colour, i, "colour", issues);
    if (v.size === undefined && v.colour === undefined)
      issues.push({
        source: { pointer: `/variants/${i}` },
        rule: "size_or_colour",
        message: "Give size, colour or both.",
      });
    if (normalized) {
      const first = gtins.get(gtin);
      if (first !== undefined)
        issues.push({
          source: { pointer: `/variants/${i}/gtin` },
          rule: "unique_items",
          message: `GTIN ${gtin} is also variant ${first}.`,
        });
      else gtins.set(gtin, i);
    }
    const s = size ?? null;
    const c = colour ?? null;
    const key = pairKey(s, c);
    if (size !== undefined && colour !== undefined && (s !== null || c !== null)) {
      const first = pairs.get(key);
      if (first !== undefined)
        issues.push({
          source: { pointer: `/variants/${i}` },
          rule: "unique_size_colour",
          message: `This size/colour pair is also variant ${first} (compared case-insensitively).`,
        });
      else pairs.set(key, i);
    }
    return { gtin, size: s, colour: c, pairKey: key };
  });
  if (issues.length) throw validationFailed(issues);
  return out;
}

/** Validates and normalises the GTINs of a removal (1 to 1000; a GTIN sent twice counts once). */
export function normalizeRemovalGtins(gtins: readonly string[]): string[] {
  if (gtins.length < 1 || gtins.length > MAX_GTINS_PER_REMOVAL)
    throw validationFailed([
      {
        source: { pointer: "/gtins" },
        rule: gtins.length < 1 ? "min_items" : "max_items",
        message: `Send 1 to ${MAX_GTINS_PER_REMOVAL} GTINs per removal.`,
      },
    ]);
  const issues = gtins.flatMap((g, i) => gtinIssue(g, `/gtins/${i}`) ?? []);
  if (issues.length) throw validationFailed(issues);
  return [...new Set(gtins.map((g) => normalizeGtin(g)!))];
}

/** A stored row as far as a new batch can conflict with it. */
export interface StoredVariantKey {
  id: string;
  gtin: string;
  pair_key: string;
}

/** already_exists, a pointer per item of the batch that a stored variant of the passport already holds. */
export function conflictsWithStored(
  batch: readonly NormalizedVariant[],
  stored: readonly StoredVariantKey[],
): ReturnType<typeof correctableRefusal> | undefined {
  const byGtin = new Map(stored.map((r) => [r.gtin, r.id]));
  const byPair = new Map(stored.map((r) => [r.pair_key, r.id]));
  const items: { pointer: string; rule: string; message: string }[] = [];
  const conflicts: { index: number; variant_id: string; on: "gtin" | "size_colour" }[] = [];
  batch.forEach((v, i) => {
    const g = byGtin.get(v.gtin);
    if (g) {
      items.push({
        pointer: `/variants/${i}/gtin`,
        rule: "unique",
        message: `Variant ${g} has GTIN ${v.gtin}.`,
      });
      conflicts.push({ index: i, variant_id: g, on: "gtin" });
    }
    const p = byPair.get(v.pairKey);
    if (p) {
      items.push({
        pointer: `/variants/${i}`,
        rule: "unique_size_colour",
        message: `Variant ${p} has this size/colour pair (compared case-insensitively).`,
      });
      conflicts.push({ index: i, variant_id: p, on: "size_colour" });
    }
  });
  if (!items.length) return undefined;
  return correctableRefusal(
    "already_exists",
    `${conflicts.length} variant${conflicts.length === 1 ? "" : "s"} of the batch already exist on this passport; nothing was added.`,
    items,
    { conflicts },
  );
}

/**
 * The ids of a batch's variants, derived from the effect key of the GTIN claim and each item's place in the batch:
 * every run of the call under one Idempotency-Key names the same rows, so a claim made by a run that died is the
 * next run's claim. One hash per batch: 21 hex digits of the key's SHA-256 (84 bits, one value per effect key),
 * then the item's place in 5 hex digits: 26 characters after `var_`, the length of every id (newId).
 */
export function variantIdsFor(effectKey: string, count: number): string[] {
  const batch = createHash("sha256").update(effectKey).digest("hex").slice(0, 21);
  return Array.from({ length: count }, (_, i) => `var_${batch}${i.toString(16).padStart(5, "0")}`);
}

export interface ReviewRow {
  id: string;
  gtin: string;
  size: string | null;
  colour: string | null;
  agent_key_id: string | null;
}

/**
 * The review fingerprint: SHA-256 (hex) over the passport's rows in their order, each row's id, GTIN, size, colour
 * and who wrote it. The same rows give the same fingerprint; any row added, removed or changed gives another.
 */
export function reviewFingerprint(rows: readonly ReviewRow[]): string {
  const h = createHash("sha256");
  for (const r of rows)
    h.update(JSON.stringify([r.id, r.gtin, r.size, r.colour, r.agent_key_id ?? null])).update("\n");
  return h.digest("hex");
}
