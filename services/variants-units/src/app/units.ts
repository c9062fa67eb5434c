/**
 * Battery units, their status machine and readings (spec: Units, Unit status; docs/decisions/0051-variants-and-units.md).
 */
import { ApiError } from "@dpp/contract";
import { requireTenant, type RequestContext, type TenantContext } from "@dpp/kit";
import {
  missingFields,
  parseReading,
  serialsTaken,
  statusChangeRefusal,
  type UnitStatus,
} from "../domain/units";
import { LimitReached, type ReadingRow, type StatusChangeRow, type UnitRow } from "../store/store";
import { notFound, readPassport, type PassportView, type VariantsUnitsApp } from "./deps";
import { citeDocument } from "./reading-documents";

export interface UnitView {
  row: UnitRow;
  values: Record<
    string,
    { value: unknown; source: string; observed_on: string; reading_id: string; unit_added_on: string }
  >;
  missingFields: string[];
  history: StatusChangeRow[];
}

function checkBattery(p: PassportView): void {
  if (p.category !== "battery")
    throw new ApiError(
      "invalid_request",
      `Units belong to battery passports; this passport's category is ${p.category}.`,
      { reason: "category_without_units", category: p.category },
    );
}

const EDITABLE = ["draft", "published", "deactivated"];
const INT_MAX = 2_147_483_647;

function checkEditable(p: PassportView): void {
  if (!EDITABLE.includes(p.status))
    throw new ApiError("wrong_status", `The units of a ${p.status} passport cannot change.`, {
      status: p.status,
      allowed_statuses: EDITABLE,
    });
}

/** The units with their latest values and histories. */
async function views(
  app: VariantsUnitsApp,
  t: TenantContext,
  rows: UnitRow[],
  known?: Map<string, StatusChangeRow[]>,
): Promise<UnitView[]> {
  const ids = rows.map((r) => r.id);
  // Histories written by this call's own transaction are given (`known`): a read of the pool does not see them yet.
  const [readings, histories] = await Promise.all([
    app.store.latestReadings(t, ids),
    known ?? app.store.histories(t, ids),
  ]);
  return rows.map((row) => {
    const latest = readings.get(row.id) ?? [];
    const values: UnitView["values"] = {};
    for (const r of latest)
      values[r.field] = {
        value: r.value,
        source: r.source,
        observed_on: r.observed_on,
        reading_id: r.id,
        unit_added_on: row.created_at.toISOString().slice(0, 10),
      };
    return {
      row,
      values,
      missingFields: missingFields(Object.keys(values)),
      history: histories.get(row.id) ?? [],
    };
  });
}

export async function createUnits(
  app: VariantsUnitsApp,
  ctx: RequestContext,
  passportId: string,
  units: { unit_serial: string; status: UnitStatus | null }[],
): Promise<UnitView[]> {
  const t = requireTenant(ctx);
  const p = await readPassport(app, ctx, passportId);
  checkBattery(p);
  checkEditable(p);
  const taken = serialsTaken(
    units.map((u) => u.unit_serial),
    await app.store.takenSerials(
      t,
      p.id,
      units.map((u) => u.unit_serial),
    ),
  );
  if (taken) throw taken;
  // No limit in the context (a caller without a plan): the tally's own bound, the largest int it holds.
  const limit = Math.min(ctx.plan?.unitLimit ?? INT_MAX, INT_MAX);
  try {
    const rows = await app.store.insertUnits(ctx, t, p.id, units, limit);
    if (!ctx.idempotency) app.onCommitted();
    const known = new Map(
      rows.map((r) => [
        r.id,
        r.status === null
          ? []
          : [
              {
                id: "",
                organization_id: t.organizationId,
                livemode: t.livemode,
                unit_id: r.id,
                seq: 0,
                from_status: null,
                to_status: r.status,
                key_id: ctx.keyId ?? "",
                changed_at: r.created_at,
              },
            ],
      ]),
    );
    return views(app, t, rows, known);
  } catch (err) {
    if (err instanceof LimitReached) throw unitLimitReached(limit, err.current, units.length);
    throw err;
  }
}

export function unitLimitReached(limit: number, current: number, requested: number): ApiError {
  return new ApiError(
    "unit_limit_reached",
    `The plan allows ${limit} units per passport; it has ${current}${requested ? ` and ${requested} were sent` : ""}.`,
    { limit, current, requested },
  );
}

export async function listUnits(
  app: VariantsUnitsApp,
  ctx: RequestContext,
  passportId: string,
  fetch: number,
  afterSeq: number | undefined,
  filters: { status?: string; unitSerial?: string },
): Promise<UnitView[]> {
  const t = requireTenant(ctx);
  await readPassport(app, ctx, passportId);
  return views(app, t, await app.store.listUnits(t, passportId, fetch, afterSeq, filters));
}

export async function getUnit(
  app: VariantsUnitsApp,
  ctx: RequestContext,
  passportId: string,
  unitId: string,
) {
  const t = requireTenant(ctx);
  await readPassport(app, ctx, passportId);
  const row = await app.store.unitById(t, passportId, unitId);
  if (!row) throw notFound("unit", unitId);
  return (await views(app, t, [row]))[0]!;
}

export async function changeUnitStatus(
  app: VariantsUnitsApp,
  ctx: RequestContext,
  passportId: string,
  unitId: string,
  next: string | null,
): Promise<{ view: UnitView; changed: boolean }> {
  const t = requireTenant(ctx);
  const p = await readPassport(app, ctx, passportId);
  checkEditable(p);
  const out = await app.store.changeStatus(ctx, t, p.id, unitId, next, (current, history) =>
    statusChangeRefusal(current.status, next, history),
  );
  if (!out) throw notFound("unit", unitId);
  if (out.changed && !ctx.idempotency) app.onCommitted();
  return {
    view: (await views(app, t, [out.unit], new Map([[out.unit.id, out.history]])))[0]!,
    changed: out.changed,
  };
}

export async function recordReading(
  app: VariantsUnitsApp,
  ctx: RequestContext,
  passportId: string,
  unitId: string,
  bodyJson: string,
  /** The call's work deadline (the cited document's registration gets the time left). */
  deadline = Infinity,
): Promise<ReadingRow> {
  const t = requireTenant(ctx);
  let body: unknown;
  try {
    body = JSON.parse(bodyJson);
  } catch {
    throw new ApiError("invalid_input", "The body is a JSON object.", {
      issues: [{ source: { pointer: "" }, rule: "json" }],
    });
  }
  const input = parseReading(body, new Date().toISOString().slice(0, 10));
  const p = await readPassport(app, ctx, passportId);
  checkEditable(p);
  const unit = await app.store.unitById(t, p.id, unitId);
  if (!unit) throw notFound("unit", unitId);
  // A cited document is registered with the documents service, which keeps it attached while the reading exists.
  const id =
    input.document_id === null
      ? undefined
      : await citeDocument(app, { ctx, deadline }, p.id, input.document_id);
  const reading = await app.store.insertReading(ctx, t, unit, input, id);
  if (!ctx.idempotency) app.onCommitted();
  return reading;
}

export async function listReadings(
  app: VariantsUnitsApp,
  ctx: RequestContext,
  passportId: string,
  unitId: string,
  fetch: number,
  afterSeq: number | undefined,
  field: string | undefined,
): Promise<ReadingRow[]> {
  const t = requireTenant(ctx);
  await readPassport(app, ctx, passportId);
  const unit = await app.store.unitById(t, passportId, unitId);
  if (!unit) throw notFound("unit", unitId);
  return app.store.listReadings(t, unitId, fetch, afterSeq, field);
}
