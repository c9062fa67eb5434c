/**
 * Every query of the variants-units service. Each filters organization_id and livemode; each write goes through
 * the kit's singleStatement or transaction with the call's context (so that a keyed call's write commits with its
 * idempotency record), or, for a removal's batches, through effectTransaction inside a `once` effect.
 */
import { sql, type Kysely, type Selectable, type Transaction } from "kysely";
import { domainEvent, newId, type DomainEvent } from "@dpp/contract";
import {
  effectTransaction,
  transaction,
  writeOutboxMany,
  type RequestContext,
  type TenantContext,
} from "@dpp/kit";
import type {
  UnitReadingTable,
  UnitStatusChangeTable,
  UnitTable,
  VariantTable,
  VariantsUnitsDB,
} from "./schema";

export type VariantRow = Selectable<VariantTable>;
export type UnitRow = Selectable<UnitTable>;
export type StatusChangeRow = Selectable<UnitStatusChangeTable>;
export type ReadingRow = Selectable<UnitReadingTable>;

/** A row of a new batch: exactly what the batch's JSON parameter carries (insertVariants). */
export interface NewVariantRow {
  id: string;
  gtin: string;
  size: string | null;
  colour: string | null;
  pair_key: string;
}

/** Who wrote a batch, when a connector key did (agent_written). */
export interface VariantAgent {
  keyId: string;
  keyName: string;
  sourceClass: string;
}

/** What a variant's events name: all a removal reads back of the rows it deletes (and their claims' release). */
export type VariantNames = Pick<VariantRow, "id" | "passport_id" | "gtin" | "size" | "colour">;

/** A variant as a batch's insert stored it (its list position, `seq`, is not read back). */
export type CreatedVariant = Omit<VariantRow, "seq">;

/** The destructive-operation cap refused a removal batch (rolled back). */
class CapReached extends Error {}

/** The limit a tally update found exceeded: the current count. */
export class LimitReached {
  constructor(readonly current: number) {}
}

const passportName = (t: TenantContext, id: string) => `organizations/${t.organizationId}/passports/${id}`;

export function variantEvent(
  type: "variant.created" | "variant.removed",
  t: TenantContext,
  r: VariantNames,
  at?: Date,
): DomainEvent {
  return domainEvent(
    type,
    t,
    {
      object: "variant",
      id: r.id,
      name: `${passportName(t, r.passport_id)}/variants/${r.id}`,
      passport_id: r.passport_id,
      passport: passportName(t, r.passport_id),
      gtin: r.gtin,
      size: r.size,
      colour: r.colour,
    },
    at,
  );
}

export function unitEvent(
  type: "unit.created" | "unit.status_changed",
  t: TenantContext,
  r: Pick<UnitRow, "id" | "passport_id" | "unit_serial" | "status">,
  previous: string | null,
): DomainEvent {
  return domainEvent(type, t, {
    object: "unit",
    id: r.id,
    name: `${passportName(t, r.passport_id)}/units/${r.id}`,
    passport_id: r.passport_id,
    passport: passportName(t, r.passport_id),
    unit_serial: r.unit_serial,
    status: r.status,
    previous_status: previous,
  });
}

export class VariantsUnitsStore {
  constructor(readonly db: Kysely<VariantsUnitsDB>) {}

  // ---- variants ----------------------------------------------------------------------------------------------

  /** The keys a new batch may conflict with, and the passport's variant count. */
  async variantKeys(t: TenantContext, passportId: string) {
    return this.db
      .selectFrom("variant")
      .where("organization_id", "=", t.organizationId)
      .where("livemode", "=", t.livemode)
      .select(["id", "gtin", "pair_key"])
      .where("passport_id", "=", passportId)
      .execute();
  }

  async variantCount(t: TenantContext, passportId: string): Promise<number> {
    const r = await this.db
      .selectFrom("passport_tally")
      .select("variant_count")
      .where("organization_id", "=", t.organizationId)
      .where("livemode", "=", t.livemode)
      .where("passport_id", "=", passportId)
      .executeTakeFirst();
    return r?.variant_count ?? 0;
  }

  /**
   * Inserts a batch with its events, in the call's transaction; the tally moves first and refuses beyond `limit`
   * (LimitReached), so that concurrent batches cannot pass it together. With `until`, the transaction ends only
   * once it settles: it commits after `until` resolved, and rolls back if it rejects. Answers the rows as stored, in
   * the batch's order.
   */
  insertVariants(
    ctx: RequestContext,
    t: TenantContext,
    passportId: string,
    rows: readonly NewVariantRow[],
    agent: VariantAgent | null,
    limit: number,
    until?: Promise<unknown>,
  ): Promise<CreatedVariant[]> {
    return transaction(this.db, ctx, async (trx) => {
      // The tally answers the transaction's time: every row's created_at (and agent_at, when a connector wrote the
      // batch), and its events'.
      const at = await this.moveTally(trx, t, passportId, "variant_count", rows.length, limit);
      // The batch as one JSON parameter, parsed once by Postgres (no per-element quoting of array parameters); the
      // writer is the call's, one for the whole batch. Nothing per row is read back. The events are built, and
      // staged behind the insert on the transaction's connection, while Postgres inserts the rows.
      const inserting = sql<{ n: number }>`
        with made as (
          insert into variant (id, organization_id, livemode, passport_id, gtin, size, colour, pair_key,
            agent_key_id, agent_key_name, agent_at, agent_source_class)
          select v.id, ${t.organizationId}, ${t.livemode}, ${passportId}, v.gtin, v.size, v.colour, v.pair_key,
            ${agent?.keyId ?? null}::text, ${agent?.keyName ?? null}::text,
            case when ${agent?.keyId ?? null}::text is null then null else now() end, ${agent?.sourceClass ?? null}::text
          from rows from (jsonb_to_recordset(${JSON.stringify(rows)}::jsonb)
            as (id text, gtin text, size text, colour text, pair_key text)) with ordinality
            as v(id, gtin, size, colour, pair_key, n)
          order by v.n
          returning 1)
        select count(*)::int as n from made`.execute(trx);
      const created = rows.map((r): CreatedVariant => ({
        id: r.id,
        organization_id: t.organizationId,
        livemode: t.livemode,
        passport_id: passportId,
        gtin: r.gtin,
        size: r.size,
        colour: r.colour,
        pair_key: r.pair_key,
        agent_key_id: agent?.keyId ?? null,
        agent_key_name: agent?.keyName ?? null,
        agent_at: agent ? at : null,
        agent_source_class: agent?.sourceClass ?? null,
        created_at: at,
      }));
      const staging = writeOutboxMany(
        trx,
        created.map((r) => variantEvent("variant.created", t, r, at)),
      );
      const [made] = await Promise.all([inserting, staging]);
      const n = made.rows[0]!.n;
      if (n !== rows.length) throw new Error(`the variant insert wrote ${n} of ${rows.length} rows`);
      await until;
      return created;
    });
  }

  private async moveTally(
    trx: Transaction<VariantsUnitsDB>,
    t: TenantContext,
    passportId: string,
    column: "variant_count" | "unit_count",
    by: number,
    limit: number,
  ): Promise<Date> {
    const col = sql.ref(column);
    const { rows } = await sql<{ n: number; at: Date }>`
      insert into passport_tally as p (organization_id, livemode, passport_id, ${col})
      select ${t.organizationId}, ${t.livemode}, ${passportId}, ${by}::int where ${by}::int <= ${limit}::int
      on conflict (organization_id, livemode, passport_id) do update
        set ${col} = p.${col} + excluded.${col}
        where p.${col} + excluded.${col} <= ${limit}::int
      returning p.${col} as n, now() as at`.execute(trx);
    if (rows[0]) return rows[0].at;
    const cur = await trx
      .selectFrom("passport_tally")
      .select(column)
      .where("organization_id", "=", t.organizationId)
      .where("livemode", "=", t.livemode)
      .where("passport_id", "=", passportId)
      .executeTakeFirst();
    throw new LimitReached(Number((cur as Record<string, number> | undefined)?.[column] ?? 0));
  }

  /** Oldest first: `fetch` rows after the position `afterSeq`. */
  listVariants(
    t: TenantContext,
    passportId: string,
    fetch: number,
    afterSeq: number | undefined,
    gtin?: string,
  ) {
    let q = this.db
      .selectFrom("variant")
      .where("organization_id", "=", t.organizationId)
      .where("livemode", "=", t.livemode)
      .selectAll()
      .where("passport_id", "=", passportId);
    if (gtin !== undefined) q = q.where("gtin", "=", gtin);
    if (afterSeq !== undefined) q = q.where("seq", ">", afterSeq);
    return q.orderBy("seq").limit(fetch).execute();
  }

  /** Every variant of the passport in its order (at most 2000). */
  allVariants(t: TenantContext, passportId: string): Promise<VariantRow[]> {
    return this.db
      .selectFrom("variant")
      .where("organization_id", "=", t.organizationId)
      .where("livemode", "=", t.livemode)
      .selectAll()
      .where("passport_id", "=", passportId)
      .orderBy("seq")
      .execute();
  }

  /** The ids of the passport's variants among `gtins` (a removal's rows; their deletes return the rows whole). */
  variantIdsByGtins(t: TenantContext, passportId: string, gtins: readonly string[]) {
    return this.db
      .selectFrom("variant")
      .where("organization_id", "=", t.organizationId)
      .where("livemode", "=", t.livemode)
      .select(["id", "gtin"])
      .where("passport_id", "=", passportId)
      .where("gtin", "=", sql<string>`any(${[...gtins]}::text[])`)
      .execute();
  }

  variantById(t: TenantContext, passportId: string, id: string) {
    return this.db
      .selectFrom("variant")
      .where("organization_id", "=", t.organizationId)
      .where("livemode", "=", t.livemode)
      .selectAll()
      .where("passport_id", "=", passportId)
      .where("id", "=", id)
      .executeTakeFirst();
  }

  /**
   * The reconciler's page (app/reconcile.ts): variants of every tenant older than `graceMs`, after `afterId` in id
   * order (the primary key's). A job's scan across tenants.
   */
  async variantsForReconcile(afterId: string, graceMs: number, limit: number) {
    const { rows } = await sql<{
      id: string;
      organization_id: string;
      livemode: boolean;
      passport_id: string;
      gtin: string;
    }>`
      select id, organization_id, livemode, passport_id, gtin from variant
      where id > ${afterId} and created_at < now() - make_interval(secs => ${graceMs / 1000}::float8)
      order by id
      limit ${limit}::int`.execute(this.db);
    return rows;
  }

  /** The variant ids of the tenant among `ids` (the passport service's reconciler's question). */
  existingVariantIds(t: TenantContext, ids: readonly string[]): Promise<string[]> {
    return this.tenantIdsAmong("variant", t, ids);
  }

  /** The unit reading ids of the tenant among `ids` (the documents service's reconciler's question). */
  existingReadingIds(t: TenantContext, ids: readonly string[]): Promise<string[]> {
    return this.tenantIdsAmong("unit_reading", t, ids);
  }

  /** The ids among `ids` of the tenant's rows in `table`, in its mode. */
  private async tenantIdsAmong(
    table: "variant" | "unit_reading",
    t: TenantContext,
    ids: readonly string[],
  ): Promise<string[]> {
    if (!ids.length) return [];
    const rows = await this.db
      .selectFrom(table)
      .where("organization_id", "=", t.organizationId)
      .where("livemode", "=", t.livemode)
      .select("id")
      .where("id", "in", ids)
      .execute();
    return rows.map((r) => r.id);
  }

  /**
   * Deletes variants by id with their events, in a removal effect's own transaction (`run`), committed before the
   * claims are released. With `cap`, first counts one destructive operation of the tenant today (UTC) within it,
   * and answers "cap_reached" (nothing deleted, nothing counted) beyond it.
   */
  deleteVariants(
    scope: { run: { deadline: number } },
    t: TenantContext,
    passportId: string,
    ids: readonly string[],
    cap?: number,
  ): Promise<VariantNames[] | "cap_reached"> {
    return effectTransaction(this.db, scope.run, async (trx) => {
      // What the events and the release need, not the whole rows.
      const deleted = await trx
        .deleteFrom("variant")
        .where("organization_id", "=", t.organizationId)
        .where("livemode", "=", t.livemode)
        .where("passport_id", "=", passportId)
        .where("id", "=", sql<string>`any(${[...ids]}::text[])`)
        .returning(["id", "passport_id", "gtin", "size", "colour"])
        .execute();
      if (!deleted.length) return deleted;
      if (cap !== undefined && !(await this.countDestructive(trx, t, cap))) {
        // Nothing of this batch stays: the cap refuses the whole call.
        throw new CapReached();
      }
      await trx
        .updateTable("passport_tally")
        .set({ variant_count: sql`variant_count - ${deleted.length}::int` })
        .where("organization_id", "=", t.organizationId)
        .where("livemode", "=", t.livemode)
        .where("passport_id", "=", passportId)
        .execute();
      await writeOutboxMany(
        trx,
        deleted.map((r) => variantEvent("variant.removed", t, r)),
      );
      const order = new Map(ids.map((id, i) => [id, i]));
      return deleted.sort((a, b) => order.get(a.id)! - order.get(b.id)!);
    }).catch((err) => {
      if (err instanceof CapReached) return "cap_reached" as const;
      throw err;
    });
  }

  /** Counts one destructive operation of the tenant today (UTC) within `cap`; false when the cap is reached. */
  private async countDestructive(
    trx: Transaction<VariantsUnitsDB>,
    t: TenantContext,
    cap: number,
  ): Promise<boolean> {
    const { rows } = await sql<{ used: number }>`
      insert into destructive_usage as d (organization_id, livemode, day, used)
      select ${t.organizationId}, ${t.livemode}, (now() at time zone 'UTC')::date, 1 where ${cap}::int >= 1
      on conflict (organization_id, livemode, day) do update set used = d.used + 1 where d.used < ${cap}::int
      returning d.used`.execute(trx);
    return rows.length > 0;
  }

  // ---- units -------------------------------------------------------------------------------------------------

  async takenSerials(t: TenantContext, passportId: string, serials: readonly string[]): Promise<Set<string>> {
    const rows = await this.db
      .selectFrom("unit")
      .where("organization_id", "=", t.organizationId)
      .where("livemode", "=", t.livemode)
      .select("unit_serial")
      .where("passport_id", "=", passportId)
      .where("unit_serial", "=", sql<string>`any(${[...serials]}::text[])`)
      .execute();
    return new Set(rows.map((r) => r.unit_serial));
  }

  async unitCount(t: TenantContext, passportId: string): Promise<number> {
    const r = await this.db
      .selectFrom("passport_tally")
      .select("unit_count")
      .where("organization_id", "=", t.organizationId)
      .where("livemode", "=", t.livemode)
      .where("passport_id", "=", passportId)
      .executeTakeFirst();
    return r?.unit_count ?? 0;
  }

  async tenantUnitCount(t: TenantContext): Promise<number> {
    const r = await this.db
      .selectFrom("passport_tally")
      .select(sql<number>`coalesce(sum(unit_count), 0)::int`.as("n"))
      .where("organization_id", "=", t.organizationId)
      .where("livemode", "=", t.livemode)
      .executeTakeFirst();
    return r?.n ?? 0;
  }

  insertUnits(
    ctx: RequestContext,
    t: TenantContext,
    passportId: string,
    units: readonly { unit_serial: string; status: string | null }[],
    limit: number,
  ): Promise<UnitRow[]> {
    return transaction(this.db, ctx, async (trx) => {
      await this.moveTally(trx, t, passportId, "unit_count", units.length, limit);
      const ids = units.map(() => newId("unit"));
      const { rows } = await sql<UnitRow>`
        insert into unit (id, organization_id, livemode, passport_id, unit_serial, status)
        select u.id, ${t.organizationId}, ${t.livemode}, ${passportId}, u.serial, u.status
        from unnest(${ids}::text[], ${units.map((u) => u.unit_serial)}::text[], ${units.map((u) => u.status)}::text[])
          with ordinality as u(id, serial, status, n)
        order by u.n
        returning *`.execute(trx);
      const byId = new Map(rows.map((r) => [r.id, r]));
      const ordered = ids.map((id) => byId.get(id)!);
      const withStatus = ordered.filter((u) => u.status !== null);
      if (withStatus.length)
        await trx
          .insertInto("unit_status_change")
          .values(
            withStatus.map((u) => ({
              id: newId("usc"),
              organization_id: t.organizationId,
              livemode: t.livemode,
              unit_id: u.id,
              from_status: null,
              to_status: u.status!,
              key_id: ctx.keyId ?? "",
            })),
          )
          .execute();
      await writeOutboxMany(
        trx,
        ordered.map((u) => unitEvent("unit.created", t, u, null)),
      );
      return ordered;
    });
  }

  listUnits(
    t: TenantContext,
    passportId: string,
    fetch: number,
    afterSeq: number | undefined,
    f: { status?: string; unitSerial?: string },
  ) {
    let q = this.db
      .selectFrom("unit")
      .where("organization_id", "=", t.organizationId)
      .where("livemode", "=", t.livemode)
      .selectAll()
      .where("passport_id", "=", passportId);
    if (f.status !== undefined) q = q.where("status", "=", f.status);
    if (f.unitSerial !== undefined) q = q.where("unit_serial", "=", f.unitSerial);
    if (afterSeq !== undefined) q = q.where("seq", ">", afterSeq);
    return q.orderBy("seq").limit(fetch).execute();
  }

  unitById(t: TenantContext, passportId: string, id: string) {
    return this.db
      .selectFrom("unit")
      .where("organization_id", "=", t.organizationId)
      .where("livemode", "=", t.livemode)
      .selectAll()
      .where("passport_id", "=", passportId)
      .where("id", "=", id)
      .executeTakeFirst();
  }

  /** The status history of these units, oldest first. */
  async histories(t: TenantContext, unitIds: readonly string[]): Promise<Map<string, StatusChangeRow[]>> {
    const out = new Map<string, StatusChangeRow[]>();
    if (!unitIds.length) return out;
    const rows = await this.db
      .selectFrom("unit_status_change")
      .where("organization_id", "=", t.organizationId)
      .where("livemode", "=", t.livemode)
      .selectAll()
      .where("unit_id", "in", unitIds)
      .orderBy("seq")
      .execute();
    for (const r of rows) out.set(r.unit_id, [...(out.get(r.unit_id) ?? []), r]);
    return out;
  }

  /** The latest reading of each field of these units (by observed_on, then recording order). */
  async latestReadings(t: TenantContext, unitIds: readonly string[]): Promise<Map<string, ReadingRow[]>> {
    const out = new Map<string, ReadingRow[]>();
    if (!unitIds.length) return out;
    const { rows } = await sql<ReadingRow>`
      select distinct on (unit_id, field) *
      from unit_reading
      where organization_id = ${t.organizationId} and livemode = ${t.livemode} and unit_id = any(${unitIds}::text[])
      order by unit_id, field, observed_on desc, seq desc`.execute(this.db);
    for (const r of rows) out.set(r.unit_id, [...(out.get(r.unit_id) ?? []), r]);
    return out;
  }

  /**
   * Changes a unit's status under a row lock: `decide` gets the locked row and its history and answers the
   * refusal to throw, or undefined; an unchanged status writes nothing.
   */
  changeStatus(
    ctx: RequestContext,
    t: TenantContext,
    passportId: string,
    unitId: string,
    next: string | null,
    decide: (current: UnitRow, history: StatusChangeRow[]) => Error | undefined,
  ): Promise<{ unit: UnitRow; changed: boolean; history: StatusChangeRow[] } | undefined> {
    return transaction(this.db, ctx, async (trx) => {
      const current = await trx
        .selectFrom("unit")
        .selectAll()
        .where("organization_id", "=", t.organizationId)
        .where("livemode", "=", t.livemode)
        .where("passport_id", "=", passportId)
        .where("id", "=", unitId)
        .forUpdate()
        .executeTakeFirst();
      if (!current) return undefined;
      const history = await trx
        .selectFrom("unit_status_change")
        .selectAll()
        .where("organization_id", "=", t.organizationId)
        .where("livemode", "=", t.livemode)
        .where("unit_id", "=", unitId)
        .orderBy("seq")
        .execute();
      const refusal = decide(current, history);
      if (refusal) throw refusal;
      if (next === current.status || next === null) return { unit: current, changed: false, history };
      const unit = await trx
        .updateTable("unit")
        .set({ status: next })
        .where("organization_id", "=", t.organizationId)
        .where("livemode", "=", t.livemode)
        .where("id", "=", unitId)
        .returningAll()
        .executeTakeFirstOrThrow();
      const change = await trx
        .insertInto("unit_status_change")
        .values({
          id: newId("usc"),
          organization_id: t.organizationId,
          livemode: t.livemode,
          unit_id: unitId,
          from_status: current.status,
          to_status: next,
          key_id: ctx.keyId ?? "",
        })
        .returningAll()
        .executeTakeFirstOrThrow();
      await writeOutboxMany(trx, [unitEvent("unit.status_changed", t, unit, current.status)]);
      return { unit, changed: true, history: [...history, change] };
    });
  }

  insertReading(
    ctx: RequestContext,
    t: TenantContext,
    unit: UnitRow,
    r: {
      field: string;
      value: unknown;
      source: string;
      observed_on: string;
      note: string | null;
      document_id: string | null;
    },
    /** The reading's id when it was chosen before (the reference a cited document's dependency was registered for). */
    id: string = newId("rdg"),
  ): Promise<ReadingRow> {
    return transaction(this.db, ctx, async (trx) => {
      const row = await trx
        .insertInto("unit_reading")
        .values({
          id,
          organization_id: t.organizationId,
          livemode: t.livemode,
          passport_id: unit.passport_id,
          unit_id: unit.id,
          field: r.field,
          value: JSON.stringify(r.value),
          source: r.source,
          observed_on: r.observed_on,
          note: r.note,
          document_id: r.document_id,
          key_id: ctx.keyId ?? "",
        })
        .returningAll()
        .executeTakeFirstOrThrow();
      await writeOutboxMany(trx, [
        domainEvent("unit.reading_recorded", t, {
          object: "unit_reading",
          id: row.id,
          unit_id: unit.id,
          unit: `${passportName(t, unit.passport_id)}/units/${unit.id}`,
          passport_id: unit.passport_id,
          field: row.field,
          observed_on: r.observed_on,
          source: row.source,
        }),
      ]);
      return row;
    });
  }

  listReadings(
    t: TenantContext,
    unitId: string,
    fetch: number,
    afterSeq: number | undefined,
    field?: string,
  ) {
    let q = this.db
      .selectFrom("unit_reading")
      .where("organization_id", "=", t.organizationId)
      .where("livemode", "=", t.livemode)
      .selectAll()
      .where("unit_id", "=", unitId);
    if (field !== undefined) q = q.where("field", "=", field);
    if (afterSeq !== undefined) q = q.where("seq", ">", afterSeq);
    return q.orderBy("seq").limit(fetch).execute();
  }
}
