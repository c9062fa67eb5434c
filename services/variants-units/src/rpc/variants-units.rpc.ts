/** VariantsUnitsService: thin handlers; the rules live in ../domain and ../app, the queries in ../store. */
import { ApiError } from "@dpp/contract";
import { decodeCursor, page, pageLimit, requireTenant, type CallContext, type ImplOf } from "@dpp/kit";
import { timestampFromDate, type variantsUnitsV1 } from "@dpp/proto";
import {
  changeUnitStatus,
  createUnits,
  getUnit,
  listReadings,
  listUnits,
  recordReading,
  type UnitView,
} from "../app/units";
import {
  createVariants,
  deleteVariant,
  gtinFilter,
  listVariants,
  removeVariants,
  reviewOf,
  variantReview,
} from "../app/variants";
import { reviewUrl, type VariantsUnitsApp } from "../app/deps";
import { isUnitStatus, normalizeUnitBatch, statusNotAllowed } from "../domain/units";
import { normalizeRemovalGtins, normalizeVariantBatch } from "../domain/variants";
import type { ReadingRow, StatusChangeRow, VariantRow } from "../store/store";

/**
 * The message of each row of a list, its timestamps made once per distinct time: the rows of one batch share their
 * creation time, so a batch's 1000 rows share one Timestamp (the encoder writes it for each).
 */
function variantMessages(rows: readonly Omit<VariantRow, "seq">[]) {
  let last: { ms: number; ts: ReturnType<typeof timestampFromDate> } | undefined;
  const stamp = (d: Date) => {
    const ms = d.getTime();
    if (last?.ms !== ms) last = { ms, ts: timestampFromDate(d) };
    return last.ts;
  };
  return rows.map((r) => ({
    id: r.id,
    organizationId: r.organization_id,
    livemode: r.livemode,
    passportId: r.passport_id,
    gtin: r.gtin,
    size: r.size ?? undefined,
    colour: r.colour ?? undefined,
    createdAt: stamp(r.created_at),
    agentWritten:
      r.agent_key_id !== null
        ? {
            keyId: r.agent_key_id,
            keyName: r.agent_key_name ?? "",
            at: stamp(r.agent_at ?? r.created_at),
            sourceClass: r.agent_source_class ?? "agent_asserted",
          }
        : undefined,
  }));
}

const changeMessage = (c: StatusChangeRow) => ({
  fromStatus: c.from_status ?? "",
  toStatus: c.to_status,
  changedAt: timestampFromDate(c.changed_at),
  keyId: c.key_id,
});

const unitMessage = (v: UnitView) => ({
  id: v.row.id,
  organizationId: v.row.organization_id,
  livemode: v.row.livemode,
  passportId: v.row.passport_id,
  unitSerial: v.row.unit_serial,
  status: v.row.status ?? "",
  createdAt: timestampFromDate(v.row.created_at),
  valuesJson: JSON.stringify(v.values),
  missingFields: v.missingFields,
  statusHistory: v.history.map(changeMessage),
});

const readingMessage = (r: ReadingRow) => ({
  id: r.id,
  unitId: r.unit_id,
  passportId: r.passport_id,
  organizationId: r.organization_id,
  livemode: r.livemode,
  field: r.field,
  valueJson: JSON.stringify(r.value),
  source: r.source,
  observedOn: r.observed_on,
  note: r.note ?? undefined,
  documentId: r.document_id ?? undefined,
  keyId: r.key_id,
  recordedAt: timestampFromDate(r.recorded_at),
});

/** A cursor's position: the `seq` of the last row of the page. */
function after(list: string, filters: Record<string, string | null>, cursor: string): number | undefined {
  const at = decodeCursor<unknown>(list, filters, cursor);
  if (at !== undefined && (typeof at !== "number" || !Number.isSafeInteger(at)))
    throw new ApiError("cursor_invalid", "The cursor is malformed; pass next_cursor exactly as received.");
  return at as number | undefined;
}

function idOf(value: string, what: string): string {
  if (value.length < 1 || value.length > 255) {
    // Cut at a code point, never inside a surrogate pair: a lone surrogate cannot be stored with the
    // recorded answer of a keyed call (Postgres JSON refuses it).
    const shown = Array.from(value).slice(0, 64).join("");
    throw new ApiError("resource_not_found", `No ${what} ${shown}.`, { id: shown });
  }
  return value;
}

/**
 * A request's batch as its preflight normalized it: the handler reads it instead of validating the 1000 items a
 * second time (the same request object reaches both; a call without the preflight, as in a unit test, computes it).
 */
const normalizedOnce = <R extends object, T>(normalize: (req: R) => T) => {
  const done = new WeakMap<R, T>();
  return (req: R): T => {
    if (done.has(req)) return done.get(req)!;
    const out = normalize(req);
    done.set(req, out);
    return out;
  };
};
const variantBatchOf = normalizedOnce((req: variantsUnitsV1.CreateVariantsRequest) =>
  normalizeVariantBatch(req.variants),
);
const removalGtinsOf = normalizedOnce((req: variantsUnitsV1.RemoveVariantsRequest) =>
  normalizeRemovalGtins(req.gtins),
);

/** The request checks that run before the call's Idempotency-Key is claimed (kit: serve's preflight). */
export const preflight = {
  createVariants: (req: variantsUnitsV1.CreateVariantsRequest) => {
    variantBatchOf(req);
  },
  removeVariants: (req: variantsUnitsV1.RemoveVariantsRequest) => {
    removalGtinsOf(req);
  },
  createUnits: (req: variantsUnitsV1.CreateUnitsRequest) => {
    normalizeUnitBatch(req.units.map((u) => ({ unit_serial: u.unitSerial, status: u.status })));
  },
};

export function variantsUnitsRpc(app: VariantsUnitsApp): ImplOf<typeof variantsUnitsV1.VariantsUnitsService> {
  const call = (c: CallContext) => ({ ctx: c.ctx, deadline: c.deadline });
  return {
    listVariants: async (req, { ctx }) => {
      const gtin = gtinFilter(req.gtin);
      const limit = pageLimit(req.limit);
      const filters = { passport: req.passportId, gtin: gtin ?? null };
      const rows = await listVariants(
        app,
        ctx,
        idOf(req.passportId, "passport"),
        limit + 1,
        after("variants", filters, req.cursor),
        gtin,
      );
      const p = page(rows, limit, { list: "variants", filters, position: (r) => r.seq });
      return { variants: variantMessages(p.rows), hasMore: p.hasMore, nextCursor: p.nextCursor };
    },

    createVariants: async (req, c) => {
      const variants = variantBatchOf(req);
      const rows = await createVariants(app, call(c), {
        passportId: idOf(req.passportId, "passport"),
        variants,
        keyName: req.keyName,
      });
      return { variants: variantMessages(rows) };
    },

    deleteVariant: async (req, c) => {
      await deleteVariant(app, call(c), idOf(req.passportId, "passport"), idOf(req.variantId, "variant"));
      return { id: req.variantId };
    },

    removeVariants: async (req, c) => {
      const gtins = removalGtinsOf(req);
      return removeVariants(app, call(c), idOf(req.passportId, "passport"), gtins);
    },

    getVariantReview: async (req, { ctx }) => {
      const r = await variantReview(app, ctx, idOf(req.passportId, "passport"));
      return {
        fingerprint: r.fingerprint,
        agentWrittenCount: r.agentWrittenCount,
        variants: variantMessages(r.rows),
      };
    },

    getPublishFacts: async (req, { ctx }) => {
      const t = requireTenant(ctx);
      const passportId = idOf(req.passportId, "passport");
      // Read from this service's own tables only: passport asks while it holds the passport's row lock.
      const [rows, units] = await Promise.all([
        app.store.allVariants(t, passportId),
        app.store.unitCount(t, passportId),
      ]);
      const r = reviewOf(rows);
      return {
        variantFingerprint: r.fingerprint,
        agentWrittenCount: r.agentWrittenCount,
        unitCount: units,
        reviewUrl: reviewUrl(app, t, passportId),
      };
    },

    findVariantOwners: async (req, { ctx }) => {
      const t = requireTenant(ctx);
      return { found: await app.store.existingVariantIds(t, req.variantIds.slice(0, 1000)) };
    },

    findReadings: async (req, { ctx }) => {
      const t = requireTenant(ctx);
      return { found: await app.store.existingReadingIds(t, req.readingIds.slice(0, 1000)) };
    },

    listUnits: async (request, { ctx }) => {
      // An absent filter may arrive as an empty string.
      const req = {
        ...request,
        status: request.status || undefined,
        unitSerial: request.unitSerial || undefined,
      };
      if (req.status !== undefined && !isUnitStatus(req.status))
        throw new ApiError(
          "invalid_request",
          `status is one of original, repurposed, re-used, remanufactured, waste.`,
          {
            issues: [{ source: { parameter: "status" }, rule: "enum" }],
          },
        );
      const limit = pageLimit(req.limit);
      const filters = {
        passport: req.passportId,
        status: req.status ?? null,
        unit_serial: req.unitSerial ?? null,
      };
      const rows = await listUnits(
        app,
        ctx,
        idOf(req.passportId, "passport"),
        limit + 1,
        after("units", filters, req.cursor),
        {
          status: req.status,
          unitSerial: req.unitSerial,
        },
      );
      const p = page(rows, limit, { list: "units", filters, position: (v) => v.row.seq });
      return { units: p.rows.map(unitMessage), hasMore: p.hasMore, nextCursor: p.nextCursor };
    },

    createUnits: async (req, { ctx }) => {
      const units = normalizeUnitBatch(
        req.units.map((u) => ({ unit_serial: u.unitSerial, status: u.status })),
      );
      const views = await createUnits(app, ctx, idOf(req.passportId, "passport"), units);
      return { units: views.map(unitMessage) };
    },

    getUnit: async (req, { ctx }) => {
      const v = await getUnit(app, ctx, idOf(req.passportId, "passport"), idOf(req.unitId, "unit"));
      return { unit: unitMessage(v) };
    },

    changeUnitStatus: async (req, { ctx }) => {
      if (req.status !== undefined && !isUnitStatus(req.status))
        throw statusNotAllowed(req.status, "/status");
      const out = await changeUnitStatus(
        app,
        ctx,
        idOf(req.passportId, "passport"),
        idOf(req.unitId, "unit"),
        req.status ?? null,
      );
      return { unit: unitMessage(out.view), changed: out.changed };
    },

    listUnitReadings: async (request, { ctx }) => {
      const req = { ...request, field: request.field || undefined };
      const limit = pageLimit(req.limit);
      const filters = { unit: req.unitId, field: req.field ?? null };
      const rows = await listReadings(
        app,
        ctx,
        idOf(req.passportId, "passport"),
        idOf(req.unitId, "unit"),
        limit + 1,
        after("unit-readings", filters, req.cursor),
        req.field,
      );
      const p = page(rows, limit, { list: "unit-readings", filters, position: (r) => r.seq });
      return { readings: p.rows.map(readingMessage), hasMore: p.hasMore, nextCursor: p.nextCursor };
    },

    recordUnitReading: async (req, { ctx, deadline }) => {
      const r = await recordReading(
        app,
        ctx,
        idOf(req.passportId, "passport"),
        idOf(req.unitId, "unit"),
        req.bodyJson,
        deadline,
      );
      return { reading: readingMessage(r) };
    },

    getUnitUsage: async (_req, { ctx }) => {
      return { unitCount: await app.store.tenantUnitCount(requireTenant(ctx)) };
    },
  };
}
