/**
 * Small builders that produce plain JSON Schema data for category field schemas, so that every category follows the
 * same conventions (see docs/decisions/0005-category-field-schemas.md):
 *
 * - every top-level field carries x-required-for-publish, x-access-tier and x-environmental;
 * - every numeric node carries x-unit;
 * - a quantity with a physical unit is an object `{value, unit}` whose `unit` is a constant;
 * - a plain percentage is a bare number 0..100 with x-unit "%" (its key ends in `_percentage`);
 * - a field that can carry an attached file names its companion `<field>_document_id` key in x-document-id-key.
 *
 * The builders only run while the registry is built; what they return is data.
 */
import type { AccessTier, CategoryDefinition, CategorySchema, FieldSchema } from "./types";

export const JSON_SCHEMA_2020_12 = "https://json-schema.org/draft/2020-12/schema";
export const SCHEMA_BASE_URI = "https://schemas.dpp.example/categories";

/** Companion keys are the field name plus this suffix. */
export const DOCUMENT_ID_SUFFIX = "_document_id";

export const COUNTRY_CODE_PATTERN = "^[A-Z]{2}$";
export const GTIN_PATTERN = "^([0-9]{8}|[0-9]{12,14})$";
export const YEAR_MONTH_PATTERN = "^[0-9]{4}-(0[1-9]|1[0-2])$";
export const EORI_PATTERN = "^[A-Z]{2}[A-Za-z0-9]{1,15}$";
export const COMMODITY_CODE_PATTERN = "^[0-9]{8}([0-9]{2})?$";
export const CAS_NUMBER_PATTERN = "^[0-9]{2,7}-[0-9]{2}-[0-9]$";

/** English explanations of the shared patterns, used in validation messages. */
export const PATTERN_MESSAGES: Readonly<Record<string, string>> = {
  [COUNTRY_CODE_PATTERN]: 'Must be a two-letter ISO 3166-1 alpha-2 country code in capitals, e.g. "PT".',
  [GTIN_PATTERN]: "A GTIN has 8, 12, 13 or 14 digits and nothing else.",
  [YEAR_MONTH_PATTERN]: 'Must be a month in the form YYYY-MM, e.g. "2026-08".',
  [EORI_PATTERN]:
    'Must be an EORI number: a two-letter country code followed by up to 15 letters or digits, e.g. "DE123456789012345".',
  [COMMODITY_CODE_PATTERN]: "Must be a Combined Nomenclature (8 digits) or TARIC (10 digits) commodity code.",
  [CAS_NUMBER_PATTERN]: 'Must be a CAS registry number, e.g. "7439-92-1".',
};

export interface FieldMeta {
  title: string;
  description: string;
  /** Default "public". */
  tier?: AccessTier;
  /** Default false. */
  publish?: boolean;
  /** Default false. */
  environmental?: boolean;
}

function annotate(meta: FieldMeta, schema: FieldSchema): FieldSchema {
  return {
    title: meta.title,
    description: meta.description,
    ...schema,
    "x-required-for-publish": meta.publish ?? false,
    "x-access-tier": meta.tier ?? "public",
    "x-environmental": meta.environmental ?? false,
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Top-level fields

export function text(
  meta: FieldMeta,
  opts: { maxLength?: number; pattern?: string; format?: string } = {},
): FieldSchema {
  const schema: FieldSchema = { type: "string", maxLength: opts.maxLength ?? 255 };
  if (opts.pattern !== undefined) schema.pattern = opts.pattern;
  if (opts.format !== undefined) schema.format = opts.format;
  return annotate(meta, schema);
}

/** Free text of up to 10 000 characters (descriptions, instructions). */
export function longText(meta: FieldMeta): FieldSchema {
  return text(meta, { maxLength: 10000 });
}

/** ISO 3166-1 alpha-2, upper case. */
export function countryCode(meta: FieldMeta): FieldSchema {
  return text(meta, { maxLength: 2, pattern: COUNTRY_CODE_PATTERN });
}

/** A GTIN as sent by the caller (8, 12, 13 or 14 digits); the check digit is checked through format "gtin". */
export function gtin(meta: FieldMeta): FieldSchema {
  return annotate(meta, { type: "string", pattern: GTIN_PATTERN, format: "gtin" });
}

export function enumeration(meta: FieldMeta, values: readonly string[]): FieldSchema {
  return annotate(meta, { type: "string", enum: [...values] });
}

/** A plain percentage: a bare number 0..100, x-unit "%". */
export function percentage(meta: FieldMeta): FieldSchema {
  return annotate(meta, { type: "number", minimum: 0, maximum: 100, "x-unit": "%" });
}

export interface QuantityOptions {
  /** Lower bound of `value`; default 0. Pass null for no lower bound (temperatures). */
  minimum?: number | null;
  maximum?: number;
  integer?: boolean;
}

/** The `{value, unit}` object schema of a quantity (also used inside array items). */
export function quantitySchema(unit: string, opts: QuantityOptions = {}): FieldSchema {
  const value: FieldSchema = { type: opts.integer ? "integer" : "number", "x-unit": unit };
  const minimum = opts.minimum === undefined ? 0 : opts.minimum;
  if (minimum !== null) value.minimum = minimum;
  if (opts.maximum !== undefined) value.maximum = opts.maximum;
  return {
    type: "object",
    additionalProperties: false,
    required: ["value", "unit"],
    properties: {
      value,
      unit: { type: "string", const: unit, description: `Always "${unit}".` },
    },
    "x-unit": unit,
  };
}

/** A quantity with a physical unit, sent as `{ "value": 12.5, "unit": "<unit>" }`. */
export function quantity(unit: string, meta: FieldMeta, opts: QuantityOptions = {}): FieldSchema {
  return annotate(meta, quantitySchema(unit, opts));
}

/** A list of distinct short strings (substance names, material names ...). */
export function stringList(
  meta: FieldMeta,
  opts: { maxItems?: number; itemMaxLength?: number } = {},
): FieldSchema {
  return annotate(meta, {
    type: "array",
    maxItems: opts.maxItems ?? 200,
    uniqueItems: true,
    items: { type: "string", minLength: 1, maxLength: opts.itemMaxLength ?? 255 },
  });
}

/** A list of objects; item keys listed in `required` are required inside each item. */
export function objectList(
  meta: FieldMeta,
  item: { properties: Record<string, FieldSchema>; required: readonly string[] },
  opts: { minItems?: number; maxItems?: number } = {},
): FieldSchema {
  const schema: FieldSchema = {
    type: "array",
    maxItems: opts.maxItems ?? 200,
    items: {
      type: "object",
      additionalProperties: false,
      required: [...item.required],
      properties: item.properties,
    },
  };
  if (opts.minItems !== undefined) schema.minItems = opts.minItems;
  return annotate(meta, schema);
}

/**
 * A field that can carry an attached file, plus its companion key `<name>_document_id` (the id of a document linked
 * to the passport). Both keys are declared so `additionalProperties: false` accepts them. The companion has the same
 * access tier as its field and is never itself required for publishing: a required field is satisfied by either.
 */
export function withDocument(name: string, field: FieldSchema): Record<string, FieldSchema> {
  const companion = `${name}${DOCUMENT_ID_SUFFIX}`;
  return {
    [name]: { ...field, "x-document-id-key": companion },
    [companion]: {
      type: "string",
      minLength: 1,
      maxLength: 255,
      title: `${String(field.title ?? name)}: document`,
      description: `Id of the passport document that holds the file for "${name}".`,
      "x-required-for-publish": false,
      "x-access-tier": field["x-access-tier"] ?? "public",
      "x-environmental": false,
    },
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Nested (array item) properties: plain schemas, no field-level annotations apart from x-unit.

export const item = {
  text(description: string, maxLength = 255): FieldSchema {
    return { type: "string", minLength: 1, maxLength, description };
  },
  country(description: string): FieldSchema {
    return { type: "string", pattern: COUNTRY_CODE_PATTERN, description };
  },
  date(description: string): FieldSchema {
    return { type: "string", format: "date", description };
  },
  percentage(description: string): FieldSchema {
    return { type: "number", minimum: 0, maximum: 100, "x-unit": "%", description };
  },
  enumeration(description: string, values: readonly string[]): FieldSchema {
    return { type: "string", enum: [...values], description };
  },
  pattern(description: string, pattern: string): FieldSchema {
    return { type: "string", pattern, description };
  },
};

// ---------------------------------------------------------------------------------------------------------------

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === "object" && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value as Record<string, unknown>)) deepFreeze(v);
  }
  return value;
}

export function defineCategory(def: {
  id: string;
  displayName: string;
  description: string;
  schemaVersion: string;
  regulations: readonly string[];
  properties: Record<string, FieldSchema>;
}): CategoryDefinition {
  const schema: CategorySchema = {
    $schema: JSON_SCHEMA_2020_12,
    $id: `${SCHEMA_BASE_URI}/${def.id}/${def.schemaVersion}`,
    title: `${def.displayName} passport data`,
    description: `Keys of the passport "data" object for the "${def.id}" category. ${def.description}`,
    type: "object",
    additionalProperties: false,
    properties: def.properties,
  };
  return deepFreeze({
    id: def.id,
    displayName: def.displayName,
    description: def.description,
    schemaVersion: def.schemaVersion,
    regulations: [...def.regulations],
    schema,
  });
}
