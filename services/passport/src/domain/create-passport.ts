/**
 * Rules for POST .../passports: the fields of a create and what is derived from them. The body's shape (known
 * members, category a string, external_id a string, data an object) is the gateway's to check; these are the
 * rules that need the categories and their field schemas.
 */
import { validationFailed, type Issue } from "@dpp/contract";
import { findCategory } from "./categories";
import { validatePassportData } from "./validate";
import { normalizeGtin } from "@dpp/contract";

export interface NewPassportFields {
  category: string;
  /** Absent when the body has none. */
  externalId?: string;
  /** The `data` member as parsed from its JSON text; undefined when the body has none. */
  data?: unknown;
}

export interface NewPassport {
  category: string;
  externalId: string | null;
  data: Record<string, unknown>;
  /** 14-digit GTIN taken from data.gtin, or null. */
  gtin: string | null;
  serialNumber: string | null;
}

export const MAX_IDENTIFIER_LENGTH = 255;

/** A length in Unicode code points (an emoji counts once), the unit of the interface's limits. */
export const codePoints = (s: string): number => [...s].length;

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

/** Checks the fields of a create; throws validation_failed listing every issue, with JSON Pointers into the body. */
export function parseNewPassport(fields: NewPassportFields): NewPassport {
  const issues: Issue[] = [];
  const { category, externalId } = fields;
  const known = findCategory(category) !== undefined;
  if (!known)
    issues.push({
      source: { pointer: "/category" },
      rule: "unknown_category",
      message: `${category} is not a category; GET /v1/categories lists them.`,
    });

  if (
    externalId !== undefined &&
    (codePoints(externalId) < 1 || codePoints(externalId) > MAX_IDENTIFIER_LENGTH)
  )
    issues.push({
      source: { pointer: "/external_id" },
      rule: "length",
      message: `external_id must be 1 to ${MAX_IDENTIFIER_LENGTH} characters.`,
    });

  const data = fields.data ?? {};
  if (!isObject(data))
    issues.push({ source: { pointer: "/data" }, rule: "type", message: "data must be an object." });
  else if (known) issues.push(...validatePassportData(category, data));

  if (issues.length) throw validationFailed(issues);

  const doc = { ...(data as Record<string, unknown>) };
  let gtin: string | null = null;
  if (typeof doc.gtin === "string") {
    gtin = normalizeGtin(doc.gtin);
    doc.gtin = gtin;
  }
  return {
    category,
    externalId: externalId ?? null,
    data: doc,
    gtin,
    serialNumber: typeof doc.serial_number === "string" ? doc.serial_number : null,
  };
}
