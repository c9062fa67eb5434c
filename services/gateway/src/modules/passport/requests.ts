/**
 * The passport routes' requests as messages: the edge checks their syntax (a body's shape, a limit, a status, a
 * timestamp) and the passport service checks what needs its data (categories, field schemas, cursors). Every
 * refusal is the one a client got when the service checked it all.
 */
import { invalidParameter, validationFailed, type ApiError, type Issue } from "@dpp/contract";
import { parseLimit, type ClientOf } from "@dpp/kit";
import { timestampFromDate, type passportV1 } from "@dpp/proto";
import { bodyObject, isObject, parseRfc3339, single, unknownMembers } from "../../http/request";
import { statusFilter } from "./mapping";

type Client = ClientOf<typeof passportV1.PassportService>;
type CreateRequest = Parameters<Client["createPassport"]>[0];
type ListRequest = Parameters<Client["listPassports"]>[0];

/** The members of a create body, in the order its issues are listed. */
export const CREATE_MEMBERS = ["category", "external_id", "data"] as const;

/**
 * POST .../passports: the body's shape. `issues` lists what the edge refuses (unknown members, category missing
 * or not a string, external_id not a string, data not an object); the request carries the members that passed.
 */
export function createPassportRequest(body: unknown): { request: CreateRequest; issues: Issue[] } {
  const b = bodyObject(body);
  const issues = unknownMembers(b, CREATE_MEMBERS);
  const request: CreateRequest = { category: "", dataJson: "" };

  if (b.category === undefined || b.category === null)
    issues.push({ source: { pointer: "/category" }, rule: "required", message: "category is required." });
  else if (typeof b.category !== "string")
    issues.push({ source: { pointer: "/category" }, rule: "type", message: "category must be a string." });
  else request.category = b.category;

  if (b.external_id !== undefined && b.external_id !== null) {
    if (typeof b.external_id !== "string")
      issues.push({
        source: { pointer: "/external_id" },
        rule: "type",
        message: "external_id must be a string.",
      });
    else request.externalId = b.external_id;
  }

  if (b.data !== undefined && b.data !== null) {
    if (!isObject(b.data))
      issues.push({ source: { pointer: "/data" }, rule: "type", message: "data must be an object." });
    else request.dataJson = JSON.stringify(b.data);
  }
  return { request, issues };
}

/**
 * GET .../passports: the query in the order the spec reports it, limit, status, category, updated_since, cursor.
 * A malformed updated_since is `deferred`: the service's check of the category comes first.
 */
export function listPassportsRequest(query: Record<string, unknown>): {
  request: ListRequest;
  deferred?: ApiError;
} {
  const raw = {
    limit: single(query, "limit"),
    cursor: single(query, "cursor"),
    status: single(query, "status"),
    category: single(query, "category"),
    updatedSince: single(query, "updated_since"),
  };
  const request: ListRequest = {
    limit: parseLimit(raw.limit),
    cursor: raw.cursor,
    status: statusFilter(raw.status),
    category: raw.category,
  };
  if (raw.updatedSince) {
    const at = parseRfc3339(raw.updatedSince);
    if (!at)
      return {
        request,
        deferred: invalidParameter(
          "updated_since",
          "rfc3339",
          "updated_since must be an RFC 3339 timestamp.",
        ),
      };
    request.updatedSince = timestampFromDate(at);
  }
  return { request };
}

/**
 * PATCH .../passports/{id}: the merge patch as JSON text. `data: null` would clear the whole document (its GTIN
 * included) in one member; it is refused, and fields are cleared one by one (`{"data": {"field": null}}`). The
 * other members are the service's to check.
 */
export function updatePassportPatch(body: unknown): string {
  const b = bodyObject(body);
  if (b.data === null)
    throw validationFailed([
      {
        source: { pointer: "/data" },
        rule: "type",
        message:
          'data must be an object; clear a field by sending it as null inside data, e.g. {"data": {"gtin": null}}.',
      },
    ]);
  return JSON.stringify(b);
}

const HEX64 = /^[0-9a-f]{64}$/;

/** POST .../publish: the optional body {variant_review_fingerprint?}. */
export function publishPassportRequest(body: unknown): { variantReviewFingerprint?: string } {
  if (body === undefined) return {};
  const b = bodyObject(body);
  const issues: Issue[] = [];
  const out: { variantReviewFingerprint?: string } = {};
  for (const [key, value] of Object.entries(b)) {
    if (key !== "variant_review_fingerprint") issues.push(...unknownMembers({ [key]: value }, []));
    else if (typeof value !== "string" || !HEX64.test(value))
      issues.push({
        source: { pointer: "/variant_review_fingerprint" },
        rule: "pattern",
        message:
          "variant_review_fingerprint is the 64-character lower-case hex string from GET .../variants/review.",
      });
    else out.variantReviewFingerprint = value;
  }
  if (issues.length) throw validationFailed(issues);
  return out;
}

/** POST .../validate: the optional body {dry_run?: boolean}; default false. */
export function validatePassportRequest(body: unknown): { dryRun: boolean } {
  if (body === undefined) return { dryRun: false };
  const b = bodyObject(body);
  const issues: Issue[] = [];
  let dryRun = false;
  for (const [key, value] of Object.entries(b)) {
    if (key !== "dry_run") issues.push(...unknownMembers({ [key]: value }, []));
    else if (typeof value !== "boolean")
      issues.push({
        source: { pointer: "/dry_run" },
        rule: "type",
        message: "dry_run must be true or false.",
      });
    else dryRun = value;
  }
  if (issues.length) throw validationFailed(issues);
  return { dryRun };
}

/** POST .../passports/{id}/proposals: the body {fields}, `fields` an object in the shape of a PATCH body. */
export function createProposalFields(body: unknown): string {
  const b = bodyObject(body);
  const issues: Issue[] = unknownMembers(b, ["fields"]);
  if (b.fields === undefined)
    issues.unshift({ source: { pointer: "/fields" }, rule: "required", message: "fields is required." });
  else if (!isObject(b.fields))
    issues.unshift({
      source: { pointer: "/fields" },
      rule: "type",
      message:
        'fields must be an object in the shape of a passport update, e.g. {"data": {"product_name": "…"}}.',
    });
  else if (b.fields.data === null)
    issues.push({
      source: { pointer: "/fields/data" },
      rule: "type",
      message: "fields.data must be an object; propose removing a field by sending it as null inside data.",
    });
  if (issues.length) throw validationFailed(issues);
  return JSON.stringify(b.fields);
}
