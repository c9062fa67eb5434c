/**
 * The category registry: one versioned JSON Schema 2020-12 document per category for the passport `data` object.
 * See docs/decisions/0005-category-field-schemas.md.
 */
import { battery } from "./battery";
import { general } from "./general";
import { textile } from "./textile";
import type { AccessTier, CategoryDefinition, FieldSchema } from "./types";

export type { AccessTier, CategoryDefinition, CategorySchema, FieldSchema } from "./types";
export { ACCESS_TIERS } from "./types";
export { METADATA_KEYWORDS, createCategoryAjv } from "./vocabulary";

const CATEGORIES: readonly CategoryDefinition[] = [textile, battery, general];
const BY_ID: ReadonlyMap<string, CategoryDefinition> = new Map(CATEGORIES.map((c) => [c.id, c]));

/** All categories, in a stable order. The objects are frozen. */
export function listCategories(): CategoryDefinition[] {
  return [...CATEGORIES];
}

export function findCategory(id: string): CategoryDefinition | undefined {
  return BY_ID.get(id);
}

function fields(id: string): [string, FieldSchema][] {
  const category = BY_ID.get(id);
  return category ? Object.entries(category.schema.properties) : [];
}

/** Top-level `data` keys marked x-required-for-publish; [] for an unknown category. */
export function fieldsRequiredForPublish(id: string): string[] {
  return fields(id)
    .filter(([, s]) => s["x-required-for-publish"] === true)
    .map(([k]) => k);
}

/** Top-level `data` keys marked x-environmental (environmental information); [] for an unknown category. */
export function environmentalFields(id: string): string[] {
  return fields(id)
    .filter(([, s]) => s["x-environmental"] === true)
    .map(([k]) => k);
}

/** Field name -> companion document-id key, for every field that can carry an attached file. */
export function documentIdKeys(id: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, s] of fields(id)) {
    const companion = s["x-document-id-key"];
    if (typeof companion === "string") out[k] = companion;
  }
  return out;
}

/** Top-level `data` key -> x-access-tier, for filtering reads by audience; {} for an unknown category. */
export function fieldAccessTiers(id: string): Record<string, AccessTier> {
  const out: Record<string, AccessTier> = {};
  for (const [k, s] of fields(id)) out[k] = s["x-access-tier"] ?? "public";
  return out;
}
