/**
 * The x-* metadata keywords of category field schemas, registered with ajv so that strict mode accepts them. They are
 * annotations: they never make a document invalid, but ajv checks their own values (a misspelt tier fails to compile).
 */
import Ajv2020 from "ajv/dist/2020";
import type { KeywordDefinition } from "ajv";
import addFormats from "ajv-formats";
import { hasGtinShape, normalizeGtin } from "@dpp/contract";
import { ACCESS_TIERS } from "./types";

export const METADATA_KEYWORDS: readonly KeywordDefinition[] = [
  { keyword: "x-unit", schemaType: "string", metaSchema: { type: "string", minLength: 1 } },
  { keyword: "x-required-for-publish", schemaType: "boolean", metaSchema: { type: "boolean" } },
  { keyword: "x-access-tier", schemaType: "string", metaSchema: { type: "string", enum: [...ACCESS_TIERS] } },
  { keyword: "x-environmental", schemaType: "boolean", metaSchema: { type: "boolean" } },
  {
    keyword: "x-document-id-key",
    schemaType: "string",
    metaSchema: { type: "string", pattern: "^[a-z][a-z0-9_]*$" },
  },
];

/**
 * Format "gtin": a string of GTIN shape must have a correct GS1 check digit. Strings of another shape pass here;
 * the field's `pattern` reports them, so one bad value yields one issue.
 */
export function isGtinFormat(s: string): boolean {
  return !hasGtinShape(s) || normalizeGtin(s) !== null;
}

/** An ajv 2020-12 instance that knows the platform's metadata keywords and formats. */
export function createCategoryAjv(): Ajv2020 {
  const ajv = new Ajv2020({ allErrors: true, strict: true, verbose: true });
  addFormats(ajv);
  ajv.addFormat("gtin", { type: "string", validate: isGtinFormat });
  for (const def of METADATA_KEYWORDS) ajv.addKeyword(def);
  return ajv;
}
