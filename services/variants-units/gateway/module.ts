/**
 * The gateway's routes of the variants-units service (this file runs in the gateway: it is listed by
 * services/gateway/src/modules/index.generated.ts): a passport's variants and review, battery units, their status
 * and readings. Each handler checks the body's shape, calls one method and maps the answer to the public JSON of
 * openapi.yaml. A body refused here never reaches the service, so its Idempotency-Key is not consumed.
 */
import { ApiError, pointerToken, type Issue } from "@dpp/contract";
import { parseLimit, type ClientOf } from "@dpp/kit";
import type { variantsUnitsV1 } from "@dpp/proto";
import {
  bodyObject,
  isObject,
  KiB,
  list,
  rfc3339,
  single,
  unknownMembers,
  type GatewayModule,
  type ModuleFactory,
} from "@dpp/gateway/modules";

export type VariantsUnitsClient = ClientOf<typeof variantsUnitsV1.VariantsUnitsService>;

const passportPath = (org: string, id: string) => `organizations/${org}/passports/${id}`;

const agentWrittenJson = (v: variantsUnitsV1.Variant) =>
  v.agentWritten
    ? {
        keyId: v.agentWritten.keyId,
        keyName: v.agentWritten.keyName,
        at: rfc3339(v.agentWritten.at),
        sourceClass: v.agentWritten.sourceClass,
      }
    : null;

export const variantJson = (v: variantsUnitsV1.Variant) => ({
  object: "variant" as const,
  id: v.id,
  name: `${passportPath(v.organizationId, v.passportId)}/variants/${v.id}`,
  organization_id: v.organizationId,
  passport_id: v.passportId,
  passport: passportPath(v.organizationId, v.passportId),
  gtin: v.gtin,
  size: v.size ?? null,
  colour: v.colour ?? null,
  livemode: v.livemode,
  created_at: rfc3339(v.createdAt),
  agent_written: agentWrittenJson(v),
});

export const unitJson = (u: variantsUnitsV1.Unit) => ({
  object: "unit" as const,
  id: u.id,
  name: `${passportPath(u.organizationId, u.passportId)}/units/${u.id}`,
  organization_id: u.organizationId,
  passport_id: u.passportId,
  passport: passportPath(u.organizationId, u.passportId),
  unit_serial: u.unitSerial,
  status: u.status || null,
  livemode: u.livemode,
  created_at: rfc3339(u.createdAt),
  values: JSON.parse(u.valuesJson || "{}") as Record<string, unknown>,
  missing_fields: u.missingFields,
  status_history: u.statusHistory.map((c) => ({
    from: c.fromStatus || null,
    to: c.toStatus,
    changed_at: rfc3339(c.changedAt),
    key_id: c.keyId,
  })),
});

export const readingJson = (r: variantsUnitsV1.UnitReading) => ({
  object: "unit_reading" as const,
  id: r.id,
  name: `${passportPath(r.organizationId, r.passportId)}/units/${r.unitId}/readings/${r.id}`,
  organization_id: r.organizationId,
  passport_id: r.passportId,
  unit_id: r.unitId,
  field: r.field,
  value: JSON.parse(r.valueJson) as unknown,
  source: r.source,
  observed_on: r.observedOn,
  note: r.note ?? null,
  document_id: r.documentId ?? null,
  key_id: r.keyId,
  livemode: r.livemode,
  recorded_at: rfc3339(r.recordedAt),
});

function refuse(issues: Issue[], what: string): never {
  throw new ApiError(
    "validation_failed",
    `The ${what} failed validation (${issues.length} issue${issues.length === 1 ? "" : "s"}).`,
    {
      issues,
    },
  );
}

/** The array member `name` of a batch body, each item an object with only `members`, of string values. */
function batch(
  body: unknown,
  name: string,
  members: readonly string[],
  required: readonly string[],
  what: string,
): Record<string, string | undefined>[] {
  const b = bodyObject(body);
  const issues = unknownMembers(b, [name]);
  const items = b[name];
  if (items === undefined)
    issues.push({ source: { pointer: `/${name}` }, rule: "required", message: `${name} is required.` });
  else if (!Array.isArray(items))
    issues.push({ source: { pointer: `/${name}` }, rule: "type", message: `${name} is an array.` });
  if (issues.length || !Array.isArray(items)) refuse(issues, what);
  const out = items.map((item, i) => {
    const at = `/${name}/${i}`;
    if (!isObject(item)) {
      issues.push({ source: { pointer: at }, rule: "type", message: "Each item is an object." });
      return {};
    }
    for (const k of Object.keys(item))
      if (!members.includes(k))
        issues.push({
          source: { pointer: `${at}/${pointerToken(k)}` },
          rule: "unknown_field",
          message: `${k} is not a field of an item.`,
        });
    const row: Record<string, string | undefined> = {};
    for (const m of members) {
      const v = item[m];
      if (v === undefined) {
        if (required.includes(m))
          issues.push({ source: { pointer: `${at}/${m}` }, rule: "required", message: `${m} is required.` });
      } else if (typeof v !== "string")
        issues.push({ source: { pointer: `${at}/${m}` }, rule: "type", message: `${m} is a string.` });
      else row[m] = v;
    }
    return row;
  });
  if (issues.length) refuse(issues, what);
  return out;
}

function gtinList(body: unknown): string[] {
  const b = bodyObject(body);
  const issues = unknownMembers(b, ["gtins"]);
  const g = b.gtins;
  if (g === undefined)
    issues.push({ source: { pointer: "/gtins" }, rule: "required", message: "gtins is required." });
  else if (!Array.isArray(g))
    issues.push({ source: { pointer: "/gtins" }, rule: "type", message: "gtins is an array." });
  else
    g.forEach((x, i) => {
      if (typeof x !== "string")
        issues.push({ source: { pointer: `/gtins/${i}` }, rule: "type", message: "A GTIN is a string." });
    });
  if (issues.length) refuse(issues, "removal");
  return g as string[];
}

const PASSPORT = "/organizations/{organization}/passports/{id}";

export function variantsUnitsModule(deps: { client: VariantsUnitsClient }): GatewayModule {
  const { client } = deps;
  return {
    name: "variants-units",
    routes: [
      {
        operationId: "listVariants",
        method: "GET",
        path: `${PASSPORT}/variants`,
        auth: "organization",
        scope: "passports:read",
        idempotent: false,
        successStatus: 200,
        query: { limit: "single", cursor: "single", gtin: "single" },
        handler: async ({ ctx, params, query }) => {
          const res = await client.listVariants(
            {
              passportId: params.id!,
              limit: parseLimit(single(query, "limit")),
              cursor: single(query, "cursor"),
              gtin: single(query, "gtin") ?? "",
            },
            { context: ctx },
          );
          return { body: list(res.variants.map(variantJson), res.hasMore, res.nextCursor || null) };
        },
      },
      {
        operationId: "createVariants",
        method: "POST",
        path: `${PASSPORT}/variants`,
        auth: "organization",
        scope: "passports:write",
        idempotent: true,
        bodyLimitBytes: 512 * KiB,
        successStatus: 201,
        handler: async ({ ctx, params, body, key }) => {
          const variants = batch(body, "variants", ["gtin", "size", "colour"], ["gtin"], "variants");
          const res = await client.createVariants(
            {
              passportId: params.id!,
              variants: variants.map((v) => ({ gtin: v.gtin!, size: v.size, colour: v.colour })),
              keyName: key?.name ?? "",
            },
            { context: ctx },
          );
          return { body: list(res.variants.map(variantJson), false, null) };
        },
      },
      // The literal paths (remove, review) come before {variantId}: the router prefers the earlier route.
      {
        operationId: "removeVariants",
        method: "POST",
        path: `${PASSPORT}/variants/remove`,
        auth: "organization",
        scope: "passports:write",
        idempotent: true,
        bodyLimitBytes: 64 * KiB,
        successStatus: 200,
        handler: async ({ ctx, params, body }) => {
          const res = await client.removeVariants(
            { passportId: params.id!, gtins: gtinList(body) },
            { context: ctx },
          );
          return { body: { object: "variant_removal", removed: res.removed, absent: res.absent } };
        },
      },
      {
        operationId: "getVariantReview",
        method: "GET",
        path: `${PASSPORT}/variants/review`,
        auth: "organization",
        scope: "passports:read",
        idempotent: false,
        successStatus: 200,
        handler: async ({ ctx, params }) => {
          const res = await client.getVariantReview({ passportId: params.id! }, { context: ctx });
          return {
            body: {
              object: "variant_review",
              passport: passportPath(ctx.organizationId!, params.id!),
              fingerprint: res.fingerprint,
              agent_written_count: res.agentWrittenCount,
              variants: res.variants.map((v) => ({
                id: v.id,
                gtin: v.gtin,
                size: v.size ?? null,
                colour: v.colour ?? null,
                agent_written: agentWrittenJson(v),
              })),
            },
          };
        },
      },
      {
        operationId: "deleteVariant",
        method: "DELETE",
        path: `${PASSPORT}/variants/{variantId}`,
        auth: "organization",
        scope: "passports:write",
        idempotent: true,
        successStatus: 200,
        handler: async ({ ctx, params }) => {
          const res = await client.deleteVariant(
            { passportId: params.id!, variantId: params.variantId! },
            { context: ctx },
          );
          return { body: { object: "variant", id: res.id, deleted: true } };
        },
      },
      {
        operationId: "listUnits",
        method: "GET",
        path: `${PASSPORT}/units`,
        auth: "organization",
        scope: "units:read",
        idempotent: false,
        successStatus: 200,
        query: { limit: "single", cursor: "single", status: "single", unit_serial: "single" },
        handler: async ({ ctx, params, query }) => {
          const res = await client.listUnits(
            {
              passportId: params.id!,
              limit: parseLimit(single(query, "limit")),
              cursor: single(query, "cursor"),
              status: single(query, "status"),
              unitSerial: single(query, "unit_serial"),
            },
            { context: ctx },
          );
          return { body: list(res.units.map(unitJson), res.hasMore, res.nextCursor || null) };
        },
      },
      {
        operationId: "createUnits",
        method: "POST",
        path: `${PASSPORT}/units`,
        auth: "organization",
        scope: "units:write",
        idempotent: true,
        bodyLimitBytes: 256 * KiB,
        successStatus: 201,
        handler: async ({ ctx, params, body }) => {
          const units = batch(body, "units", ["unit_serial", "status"], ["unit_serial"], "units");
          const res = await client.createUnits(
            {
              passportId: params.id!,
              units: units.map((u) => ({ unitSerial: u.unit_serial!, status: u.status })),
            },
            { context: ctx },
          );
          return { body: list(res.units.map(unitJson), false, null) };
        },
      },
      {
        operationId: "changeUnitStatus",
        method: "POST",
        path: `${PASSPORT}/units/{unitId}/status`,
        auth: "organization",
        scope: "units:write",
        idempotent: true,
        bodyLimitBytes: 4 * KiB,
        successStatus: 200,
        handler: async ({ ctx, params, body }) => {
          const b = bodyObject(body);
          const issues = unknownMembers(b, ["status"]);
          if (!("status" in b))
            issues.push({
              source: { pointer: "/status" },
              rule: "required",
              message: "status is required (null clears it).",
            });
          else if (b.status !== null && typeof b.status !== "string")
            issues.push({
              source: { pointer: "/status" },
              rule: "type",
              message: "status is a string or null.",
            });
          if (issues.length) refuse(issues, "status change");
          const res = await client.changeUnitStatus(
            {
              passportId: params.id!,
              unitId: params.unitId!,
              status: (b.status as string | null) ?? undefined,
            },
            { context: ctx },
          );
          return { body: unitJson(res.unit!) };
        },
      },
      {
        operationId: "listUnitReadings",
        method: "GET",
        path: `${PASSPORT}/units/{unitId}/readings`,
        auth: "organization",
        scope: "units:read",
        idempotent: false,
        successStatus: 200,
        query: { limit: "single", cursor: "single", field: "single" },
        handler: async ({ ctx, params, query }) => {
          const res = await client.listUnitReadings(
            {
              passportId: params.id!,
              unitId: params.unitId!,
              limit: parseLimit(single(query, "limit")),
              cursor: single(query, "cursor"),
              field: single(query, "field"),
            },
            { context: ctx },
          );
          return { body: list(res.readings.map(readingJson), res.hasMore, res.nextCursor || null) };
        },
      },
      {
        operationId: "recordUnitReading",
        method: "POST",
        path: `${PASSPORT}/units/{unitId}/readings`,
        auth: "organization",
        scope: "units:write",
        idempotent: true,
        bodyLimitBytes: 16 * KiB,
        successStatus: 201,
        handler: async ({ ctx, params, body }) => {
          const res = await client.recordUnitReading(
            { passportId: params.id!, unitId: params.unitId!, bodyJson: JSON.stringify(body ?? null) },
            { context: ctx },
          );
          return { body: readingJson(res.reading!) };
        },
      },
    ],
  };
}

/** The module in the gateway's module list. */
export const fromDeps: ModuleFactory = (deps) => variantsUnitsModule({ client: deps.variantsUnits });
