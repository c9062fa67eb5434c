/**
 * Validation of a passport `data` object against its category's field schema, reported as API issues
 * (`{source: {pointer}, rule, message}`) with JSON Pointers prefixed by `/data`.
 *
 * Draft validity (validatePassportData) and publish requirements (publishIssues) are separate: a draft may be
 * incomplete, but every key it holds must be known and well-formed.
 */
import type { Issue } from "@dpp/contract";
import type { ErrorObject, ValidateFunction } from "ajv";
import type Ajv2020 from "ajv/dist/2020";
import { createCategoryAjv, documentIdKeys, fieldsRequiredForPublish, findCategory } from "./categories";
import type { CategoryDefinition } from "./categories";
import { PATTERN_MESSAGES } from "./categories/fields";
import { gtinCheckDigit } from "@dpp/contract";

/** Every rule name this module can report. Stable English identifiers; callers branch on them. */
export const VALIDATION_RULES = [
  "unknown_category",
  "unknown_field",
  "required",
  "type",
  "enum",
  "const",
  "unit",
  "pattern",
  "format",
  "gtin_check_digit",
  "minimum",
  "maximum",
  "exclusive_minimum",
  "exclusive_maximum",
  "multiple_of",
  "min_length",
  "max_length",
  "min_items",
  "max_items",
  "unique_items",
  "required_for_publish",
] as const;
export type ValidationRule = (typeof VALIDATION_RULES)[number];

const DATA_POINTER = "/data";

/** Escapes one JSON Pointer reference token (RFC 6901). */
export function escapePointerToken(token: string): string {
  return token.replace(/~/g, "~0").replace(/\//g, "~1");
}

let ajv: Ajv2020 | undefined;
const compiled = new Map<string, ValidateFunction>();

/** The compiled validator of a category's schema; compiled once per schema `$id` (category and version). */
function validatorFor(category: CategoryDefinition): ValidateFunction {
  const key = category.schema.$id;
  let validate = compiled.get(key);
  if (!validate) {
    ajv ??= createCategoryAjv();
    validate = ajv.compile(category.schema);
    compiled.set(key, validate);
  }
  return validate;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

function unknownCategory(categoryId: string): Issue[] {
  return [
    {
      source: { pointer: "/category" },
      rule: "unknown_category",
      message: `There is no category "${categoryId}".`,
    },
  ];
}

/**
 * Validates a passport `data` object (draft rules: no key is required at the top level). Returns [] when valid.
 * An unknown category gives one `unknown_category` issue at `/category`; data that is not a JSON object gives one
 * `type` issue at `/data`.
 */
export function validatePassportData(categoryId: string, data: unknown): Issue[] {
  const category = findCategory(categoryId);
  if (!category) return unknownCategory(categoryId);
  if (!isPlainObject(data)) {
    return [
      {
        source: { pointer: DATA_POINTER },
        rule: "type",
        message: "The passport data must be a JSON object.",
      },
    ];
  }
  const validate = validatorFor(category);
  if (validate(data)) return [];

  const issues: Issue[] = [];
  const seen = new Set<string>();
  for (const error of validate.errors ?? []) {
    const issue = toIssue(error, category.id);
    const key = `${issue.rule} ${"pointer" in issue.source ? issue.source.pointer : ""}`;
    if (seen.has(key)) continue;
    seen.add(key);
    issues.push(issue);
  }
  return issues;
}

// ---------------------------------------------------------------------------------------------------------------

const TYPE_NAMES: Record<string, string> = {
  string: "a string",
  number: "a number",
  integer: "a whole number",
  boolean: "true or false",
  object: "an object",
  array: "an array",
  null: "null",
};

function unitSuffix(unit: unknown): string {
  if (typeof unit !== "string") return "";
  return unit === "%" ? "%" : ` ${unit}`;
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}

function issue(pointer: string, rule: ValidationRule, message: string): Issue {
  return { source: { pointer }, rule, message };
}

function toIssue(error: ErrorObject, categoryId: string): Issue {
  const pointer = DATA_POINTER + error.instancePath;
  const params = error.params as Record<string, unknown>;
  const parent = (error.parentSchema ?? {}) as Record<string, unknown>;

  switch (error.keyword) {
    case "additionalProperties": {
      const key = String(params.additionalProperty);
      const message =
        error.instancePath === ""
          ? `Unknown field "${key}": the ${categoryId} field schema does not define it.`
          : `Unknown key "${key}" in this object.`;
      return issue(`${pointer}/${escapePointerToken(key)}`, "unknown_field", message);
    }
    case "required": {
      const key = String(params.missingProperty);
      const properties = (parent.properties ?? {}) as Record<string, Record<string, unknown>>;
      const unit = properties[key]?.const;
      const message =
        key === "unit" && typeof unit === "string"
          ? `Missing "unit": a number is sent together with its unit, here "${unit}".`
          : `Missing required key "${key}".`;
      return issue(`${pointer}/${escapePointerToken(key)}`, "required", message);
    }
    case "type": {
      const unit = parent["x-unit"];
      if (parent.type === "object" && typeof unit === "string") {
        return issue(pointer, "type", `Expected an object {"value": <number>, "unit": "${unit}"}.`);
      }
      const expected = String(params.type);
      return issue(pointer, "type", `Expected ${TYPE_NAMES[expected] ?? expected}.`);
    }
    case "const": {
      const allowed = JSON.stringify(params.allowedValue);
      if (error.schemaPath.endsWith("/properties/unit/const")) {
        return issue(pointer, "unit", `The unit must be ${allowed}, not ${JSON.stringify(error.data)}.`);
      }
      return issue(pointer, "const", `Must be ${allowed}.`);
    }
    case "enum": {
      const allowed = (params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(", ");
      return issue(pointer, "enum", `Must be one of ${allowed}.`);
    }
    case "pattern": {
      const pattern = String(params.pattern);
      return issue(pointer, "pattern", PATTERN_MESSAGES[pattern] ?? `Must match the pattern ${pattern}.`);
    }
    case "format": {
      if (params.format === "gtin") {
        const value = String(error.data);
        const padded = value.padStart(14, "0");
        const message = /^0+$/.test(padded)
          ? "A GTIN cannot be all zeros."
          : `The GTIN check digit is wrong: expected ${gtinCheckDigit(padded.slice(0, 13))}, got ${padded.slice(13)}.`;
        return issue(pointer, "gtin_check_digit", message);
      }
      const message =
        params.format === "date"
          ? 'Must be a date in the form YYYY-MM-DD, e.g. "2026-08-01".'
          : `Must be a valid ${String(params.format)}.`;
      return issue(pointer, "format", message);
    }
    case "minimum":
      return issue(
        pointer,
        "minimum",
        `Must be at least ${String(params.limit)}${unitSuffix(parent["x-unit"])}.`,
      );
    case "maximum":
      return issue(
        pointer,
        "maximum",
        `Must be at most ${String(params.limit)}${unitSuffix(parent["x-unit"])}.`,
      );
    case "exclusiveMinimum":
      return issue(
        pointer,
        "exclusive_minimum",
        `Must be greater than ${String(params.limit)}${unitSuffix(parent["x-unit"])}.`,
      );
    case "exclusiveMaximum":
      return issue(
        pointer,
        "exclusive_maximum",
        `Must be less than ${String(params.limit)}${unitSuffix(parent["x-unit"])}.`,
      );
    case "multipleOf":
      return issue(pointer, "multiple_of", `Must be a multiple of ${String(params.multipleOf)}.`);
    case "minLength": {
      const limit = Number(params.limit);
      const message =
        limit === 1 ? "Must not be empty." : `Must be at least ${plural(limit, "character")} long.`;
      return issue(pointer, "min_length", message);
    }
    case "maxLength":
      return issue(
        pointer,
        "max_length",
        `Must be at most ${plural(Number(params.limit), "character")} long.`,
      );
    case "minItems":
      return issue(pointer, "min_items", `Must have at least ${plural(Number(params.limit), "item")}.`);
    case "maxItems":
      return issue(pointer, "max_items", `Must have at most ${plural(Number(params.limit), "item")}.`);
    case "uniqueItems":
      return issue(
        pointer,
        "unique_items",
        `Items ${String(params.j)} and ${String(params.i)} are the same; each item may appear once.`,
      );
    default: {
      // Not produced by the current schemas; keep a stable snake_case name derived from the keyword.
      const rule = error.keyword.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
      const text = error.message ?? "is invalid";
      return { source: { pointer }, rule, message: `${text.charAt(0).toUpperCase()}${text.slice(1)}.` };
    }
  }
}

// ---------------------------------------------------------------------------------------------------------------

/**
 * Empty for publishing: absent, null, a blank string, or an object without keys. An empty array is a value: it
 * declares "none" (e.g. no substances of concern).
 */
function isEmptyValue(value: unknown): boolean {
  if (value === undefined || value === null) return true;
  if (typeof value === "string") return value.trim() === "";
  if (isPlainObject(value)) return Object.keys(value).length === 0;
  return false;
}

function own(data: Record<string, unknown>, key: string): unknown {
  return Object.prototype.hasOwnProperty.call(data, key) ? data[key] : undefined;
}

/**
 * Publish requirements: one `required_for_publish` issue at `/data/<field>` for each field marked
 * x-required-for-publish that is missing or empty. A field that can carry an attached file is also satisfied by a
 * non-empty companion document-id key (whether that document is still attached is the caller's check).
 * Run it together with validatePassportData: it does not repeat schema errors.
 */
export function publishIssues(categoryId: string, data: unknown): Issue[] {
  const category = findCategory(categoryId);
  if (!category) return unknownCategory(categoryId);
  const values = isPlainObject(data) ? data : {};
  const companions = documentIdKeys(categoryId);
  const issues: Issue[] = [];
  for (const field of fieldsRequiredForPublish(categoryId)) {
    const companion = companions[field];
    if (!isEmptyValue(own(values, field))) continue;
    if (companion !== undefined && !isEmptyValue(own(values, companion))) continue;
    const title = category.schema.properties[field]?.title ?? field;
    const message =
      companion === undefined
        ? `${title} ("${field}") is required before publishing.`
        : `${title} ("${field}") is required before publishing; fill it in or attach a document under "${companion}".`;
    issues.push(issue(`${DATA_POINTER}/${escapePointerToken(field)}`, "required_for_publish", message));
  }
  return issues;
}
