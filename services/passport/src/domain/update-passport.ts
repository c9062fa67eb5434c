/**
 * Rules for PATCH .../passports/{id}: the body is an RFC 7386 merge patch of the passport document. Writable
 * members: `data` (merged key by key; null removes a key; arrays are replaced whole) and `external_id` (null
 * removes it). Every other member of the passport resource is read-only; any other key is unknown.
 */
import { pointerToken, validationFailed, type Issue } from "@dpp/contract";
import { applyMergePatch, jsonEqual, type Json } from "./merge-patch";
import { validatePassportData } from "./validate";
import { normalizeGtin } from "@dpp/contract";
import { codePoints, MAX_IDENTIFIER_LENGTH } from "./create-passport";

const READ_ONLY = new Set([
  "object",
  "id",
  "name",
  "organization_id",
  "category",
  "status",
  "gtin",
  "serial_number",
  "version",
  "livemode",
  "registry_id",
  "created_at",
  "updated_at",
  "published_at",
  "trashed_at",
  "warnings",
]);

export interface PassportPatch {
  /** The merge patch of `data`; undefined when `data` was not sent. */
  data?: Record<string, Json> | null;
  /** undefined: unchanged; null: removed. */
  externalId?: string | null;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

/** The shape of the patch body; refuses unknown and read-only members with JSON Pointers. */
export function parsePatchBody(body: unknown): PassportPatch {
  if (!isObject(body))
    throw validationFailed([
      { source: { pointer: "" }, rule: "type", message: "The merge patch must be a JSON object." },
    ]);
  const issues: Issue[] = [];
  const out: PassportPatch = {};
  for (const [key, value] of Object.entries(body)) {
    const pointer = `/${pointerToken(key)}`;
    if (key === "data") {
      if (value !== null && !isObject(value))
        issues.push({
          source: { pointer },
          rule: "type",
          message: "data must be an object (or null to clear it).",
        });
      else out.data = value as Record<string, Json> | null;
    } else if (key === "external_id") {
      if (value === null) out.externalId = null;
      else if (typeof value !== "string")
        issues.push({ source: { pointer }, rule: "type", message: "external_id must be a string or null." });
      else if (codePoints(value) < 1 || codePoints(value) > MAX_IDENTIFIER_LENGTH)
        issues.push({
          source: { pointer },
          rule: "length",
          message: `external_id must be 1 to ${MAX_IDENTIFIER_LENGTH} characters.`,
        });
      else out.externalId = value;
    } else if (READ_ONLY.has(key)) {
      issues.push({
        source: { pointer },
        rule: "read_only",
        message:
          key === "gtin" || key === "serial_number"
            ? `${key} is derived from data.${key}; patch data.${key} instead.`
            : `${key} cannot be changed.`,
      });
    } else {
      issues.push({
        source: { pointer },
        rule: "unknown_field",
        message: `${key} is not a field of a passport.`,
      });
    }
  }
  if (issues.length) throw validationFailed(issues);
  return out;
}

export interface PatchTarget {
  category: string;
  data: Record<string, unknown>;
  external_id: string | null;
}

export interface PatchResult {
  data: Record<string, unknown>;
  externalId: string | null;
  gtin: string | null;
  serialNumber: string | null;
  /** False when the patch changes nothing (no new version, no event). */
  changed: boolean;
}

/** Applies a parsed patch to a passport; throws validation_failed for a merged document the schema refuses. */
export function applyPassportPatch(current: PatchTarget, patch: PassportPatch): PatchResult {
  let data = current.data;
  if (patch.data !== undefined) {
    const merged = patch.data === null ? {} : applyMergePatch(current.data as Json, patch.data);
    data = merged as Record<string, unknown>;
    const issues = validatePassportData(current.category, data);
    if (issues.length) throw validationFailed(issues);
    if (typeof data.gtin === "string") data = { ...data, gtin: normalizeGtin(data.gtin) };
  }
  const externalId = patch.externalId === undefined ? current.external_id : patch.externalId;
  return {
    data,
    externalId,
    gtin: typeof data.gtin === "string" ? data.gtin : null,
    serialNumber: typeof data.serial_number === "string" ? data.serial_number : null,
    changed: !jsonEqual(data, current.data) || externalId !== current.external_id,
  };
}
