/**
 * The gateway's routes of the imports service (this file runs in the gateway: it is listed by
 * services/gateway/src/modules/index.generated.ts). Each handler reads the request, calls one method and maps
 * the answer to the public JSON of openapi.yaml. The shape of every row (its members and their types) is checked
 * here, up front, with a pointer per issue; what a row's passport may hold is checked by passport when the row is
 * processed (docs/decisions/0053-imports-jobs-rows-and-per-row-keys.md).
 */
import { ApiError, invalidParameter, pointerToken } from "@dpp/contract";
import { parseLimit, type ClientOf } from "@dpp/kit";
import { importsV1 } from "@dpp/proto";
import {
  bodyObject,
  isObject,
  list,
  MiB,
  rfc3339,
  rfc3339OrNull,
  single,
  unknownMembers,
  type GatewayModule,
  type ModuleFactory,
} from "@dpp/gateway/modules";

export type ImportsClient = ClientOf<typeof importsV1.ImportsService>;

/** Rows of one job; beyond it the rule `max_rows`. */
export const MAX_ROWS = 500;
/** row_limit when not given, and its largest value (a whole job). */
export const DEFAULT_ROW_LIMIT = 100;
export const MAX_ROW_LIMIT = 500;

const ROW_MEMBERS = ["category", "data", "external_id"] as const;

const STATUSES: [string, importsV1.ImportStatus][] = [
  ["queued", importsV1.ImportStatus.QUEUED],
  ["running", importsV1.ImportStatus.RUNNING],
  ["completed", importsV1.ImportStatus.COMPLETED],
  ["failed", importsV1.ImportStatus.FAILED],
];

function statusName(s: importsV1.ImportStatus): string {
  const entry = STATUSES.find(([, v]) => v === s);
  if (!entry) throw new Error(`import status ${s} has no name`);
  return entry[0];
}

export const importJobJson = (j: importsV1.ImportJob) => ({
  object: "import_job" as const,
  id: j.id,
  name: `organizations/${j.organizationId}/imports/${j.id}`,
  organization_id: j.organizationId,
  livemode: j.livemode,
  status: statusName(j.status),
  total_rows: j.totalRows,
  succeeded_rows: j.succeededRows,
  failed_rows: j.failedRows,
  pending_rows: j.pendingRows,
  attempts: j.attempts,
  created_at: rfc3339(j.createdAt),
  started_at: rfc3339OrNull(j.startedAt),
  completed_at: rfc3339OrNull(j.completedAt),
});

export const importRowJson = (organizationId: string, r: importsV1.ImportRowResult) => ({
  object: "import_row" as const,
  row_index: r.rowIndex,
  external_id: r.externalId ?? null,
  status: r.succeeded ? ("succeeded" as const) : ("failed" as const),
  passport_id: r.passportId ?? null,
  passport_name: r.passportId ? `organizations/${organizationId}/passports/${r.passportId}` : null,
  error: r.error
    ? {
        code: r.error.code,
        detail: r.error.detail,
        details: JSON.parse(r.error.detailsJson || "{}") as Record<string, unknown>,
      }
    : null,
  processed_at: rfc3339(r.processedAt),
});

/** POST .../imports: the rows in the order sent, or every shape issue with its pointer. */
export function createImportRequest(body: unknown): importsV1.ImportRowInput[] {
  const b = bodyObject(body);
  const issues = unknownMembers(b, ["rows"]);
  const rows: importsV1.ImportRowInput[] = [];
  if (b.rows === undefined || b.rows === null)
    issues.push({ source: { pointer: "/rows" }, rule: "required", message: "rows is required." });
  else if (!Array.isArray(b.rows))
    issues.push({ source: { pointer: "/rows" }, rule: "type", message: "rows must be an array." });
  else if (b.rows.length > MAX_ROWS)
    throw new ApiError(
      "validation_failed",
      `An import holds at most ${MAX_ROWS} rows; split the rows into jobs.`,
      {
        issues: [
          {
            source: { pointer: "/rows" },
            rule: "max_rows",
            message: `rows holds ${b.rows.length} rows; at most ${MAX_ROWS} per job.`,
          },
        ],
        limit: MAX_ROWS,
        requested: b.rows.length,
      },
    );
  else if (b.rows.length === 0)
    issues.push({ source: { pointer: "/rows" }, rule: "min_rows", message: "rows must hold 1 to 500 rows." });
  else
    b.rows.forEach((row: unknown, i: number) => {
      const at = `/rows/${i}`;
      if (!isObject(row)) {
        issues.push({ source: { pointer: at }, rule: "type", message: `row ${i} must be an object.` });
        return;
      }
      const r = row as Record<string, unknown>;
      for (const key of Object.keys(r).filter((k) => !(ROW_MEMBERS as readonly string[]).includes(k)))
        issues.push({
          source: { pointer: `${at}/${pointerToken(key)}` },
          rule: "unknown_field",
          message: `${key} is not a field of an import row (category, data, external_id).`,
        });
      const input: importsV1.ImportRowInput = { category: "", dataJson: "{}" } as importsV1.ImportRowInput;
      if (r.category === undefined || r.category === null)
        issues.push({
          source: { pointer: `${at}/category` },
          rule: "required",
          message: "category is required.",
        });
      else if (typeof r.category !== "string")
        issues.push({
          source: { pointer: `${at}/category` },
          rule: "type",
          message: "category must be a string.",
        });
      else input.category = r.category;
      if (r.data === undefined || r.data === null)
        issues.push({ source: { pointer: `${at}/data` }, rule: "required", message: "data is required." });
      else if (!isObject(r.data))
        issues.push({ source: { pointer: `${at}/data` }, rule: "type", message: "data must be an object." });
      else input.dataJson = JSON.stringify(r.data);
      if (r.external_id !== undefined && r.external_id !== null) {
        if (typeof r.external_id !== "string")
          issues.push({
            source: { pointer: `${at}/external_id` },
            rule: "type",
            message: "external_id must be a string.",
          });
        else input.externalId = r.external_id;
      }
      rows.push(input);
    });
  if (issues.length) throw new ApiError("validation_failed", "The import cannot be queued.", { issues });
  return rows;
}

/** A non-negative integer query parameter, or undefined when absent. */
function intParameter(
  query: Record<string, unknown>,
  name: string,
  min: number,
  max: number,
): number | undefined {
  const text = single(query, name);
  if (text === "") return undefined;
  const n = /^-?\d{1,10}$/.test(text) ? Number(text) : NaN;
  if (!Number.isInteger(n) || n < min || n > max)
    throw invalidParameter(name, "range", `${name} must be an integer from ${min} to ${max}.`);
  return n;
}

export function importsModule(deps: { client: ImportsClient }): GatewayModule {
  const { client } = deps;
  return {
    name: "imports",
    routes: [
      {
        operationId: "createImport",
        method: "POST",
        path: "/organizations/{organization}/imports",
        auth: "organization",
        scope: "passports:write",
        idempotent: true,
        bodyLimitBytes: 8 * MiB,
        successStatus: 202,
        handler: async ({ ctx, body }) => {
          const rows = createImportRequest(body);
          const res = await client.createImport({ rows }, { context: ctx });
          return { body: importJobJson(res.job!) };
        },
      },
      {
        operationId: "listImports",
        method: "GET",
        path: "/organizations/{organization}/imports",
        auth: "organization",
        scope: "passports:read",
        idempotent: false,
        successStatus: 200,
        query: { limit: "single", cursor: "single", status: "single" },
        handler: async ({ ctx, query }) => {
          const limit = parseLimit(single(query, "limit"));
          const text = single(query, "status");
          const entry = STATUSES.find(([name]) => name === text);
          if (text !== "" && !entry)
            throw invalidParameter(
              "status",
              "enum",
              `status must be one of ${STATUSES.map(([name]) => name).join(", ")}.`,
            );
          const res = await client.listImports(
            {
              limit,
              cursor: single(query, "cursor"),
              status: entry?.[1] ?? importsV1.ImportStatus.UNSPECIFIED,
            },
            { context: ctx },
          );
          return { body: list(res.jobs.map(importJobJson), res.hasMore, res.nextCursor || null) };
        },
      },
      {
        operationId: "getImport",
        method: "GET",
        path: "/organizations/{organization}/imports/{id}",
        auth: "organization",
        scope: "passports:read",
        idempotent: false,
        successStatus: 200,
        query: { row_limit: "single", after_row_index: "single" },
        handler: async ({ ctx, params, query }) => {
          const rowLimit = intParameter(query, "row_limit", 0, MAX_ROW_LIMIT) ?? DEFAULT_ROW_LIMIT;
          const afterRowIndex = intParameter(query, "after_row_index", -1, MAX_ROWS - 1);
          const res = await client.getImport({ id: params.id!, rowLimit, afterRowIndex }, { context: ctx });
          const job = res.job!;
          const rows = res.rows.map((r) => importRowJson(job.organizationId, r));
          return {
            body: {
              ...importJobJson(job),
              rows: {
                object: "list" as const,
                data: rows,
                has_more: res.rowsHasMore,
                next_after_row_index: res.rowsHasMore ? rows[rows.length - 1]!.row_index : null,
              },
            },
          };
        },
      },
    ],
  };
}

/** The module in the gateway's module list. */
export const fromDeps: ModuleFactory = (deps) => importsModule({ client: deps.imports });
