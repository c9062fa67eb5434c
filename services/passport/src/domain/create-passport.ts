/** Rules for POST .../passports: the body's shape, its data, and what is derived from it. */
import { pointerToken, validationFailed, type Issue } from "@dpp/contract";
import { findCategory } from "./categories";
import { validatePassportData } from "./validate";
import { normalizeGtin } from "./gtin";

export interface NewPassport {
  category: string;
  externalId: string | null;
  data: Record<string, unknown>;
  /** 14-digit GTIN taken from data.gtin, or null. */
  gtin: string | null;
  serialNumber: string | null;
}

const BODY_KEYS = new Set(["category", "external_id", "data"]);
export const MAX_IDENTIFIER_LENGTH = 255;

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

/** Parses and validates a create body; throws validation_failed listing every issue. */
export function parseCreateBody(body: unknown): NewPassport {
  const issues: Issue[] = [];
  if (!isObject(body))
    throw validationFailed([{ source: { pointer: "" }, rule: "type", message: "expected an object" }]);
  for (const key of Object.keys(body))
    if (!BODY_KEYS.has(key))
      issues.push({
        source: { pointer: `/${pointerToken(key)}` },
        rule: "unknown_field",
        message: `${key} is not a field of this body.`,
      });

  const category = body.category;
  if (category === undefined || category === null)
    issues.push({ source: { pointer: "/category" }, rule: "required", message: "category is required." });
  else if (typeof category !== "string")
    issues.push({ source: { pointer: "/category" }, rule: "type", message: "category must be a string." });
  else if (!findCategory(category))
    issues.push({
      source: { pointer: "/category" },
      rule: "unknown_category",
      message: `${category} is not a category; GET /v1/categories lists them.`,
    });

  const externalId = body.external_id;
  if (externalId !== undefined && externalId !== null) {
    if (typeof externalId !== "string")
      issues.push({
        source: { pointer: "/external_id" },
        rule: "type",
        message: "external_id must be a string.",
      });
    else if (externalId.length < 1 || externalId.length > MAX_IDENTIFIER_LENGTH)
      issues.push({
        source: { pointer: "/external_id" },
        rule: "length",
        message: `external_id must be 1 to ${MAX_IDENTIFIER_LENGTH} characters.`,
      });
  }

  const data = body.data === undefined || body.data === null ? {} : body.data;
  if (!isObject(data))
    issues.push({ source: { pointer: "/data" }, rule: "type", message: "data must be an object." });
  else if (typeof category === "string" && findCategory(category))
    issues.push(...validatePassportData(category, data));

  if (issues.length) throw validationFailed(issues);

  const doc = { ...(data as Record<string, unknown>) };
  let gtin: string | null = null;
  if (typeof doc.gtin === "string") {
    gtin = normalizeGtin(doc.gtin);
    doc.gtin = gtin;
  }
  return {
    category: category as string,
    externalId: (externalId as string | undefined) ?? null,
    data: doc,
    gtin,
    serialNumber: typeof doc.serial_number === "string" ? doc.serial_number : null,
  };
}
