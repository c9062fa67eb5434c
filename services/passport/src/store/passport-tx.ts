import { sql, type Kysely, type Transaction } from "kysely";
import { type DomainEvent } from "@dpp/contract";
import { isUniqueViolation, outboxInsert, writeOutbox } from "@dpp/kit";
import type { PassportDB } from "./schema";
import { lockById, PassportReads } from "./passport-reads";
import {
  UniqueConflict,
  type ClaimRow,
  type NewPassportRow,
  type NewProposal,
  type NewPublishApproval,
  type ProposalRow,
  type PublishApprovalRow,
  type NewValidation,
  type PassportChange,
  type PassportRow,
  type Tenant,
} from "./types";

const now = sql<Date>`now()`;

/** The store bound to one transaction. */
export class PassportTx extends PassportReads {
  constructor(private readonly trx: Transaction<PassportDB>) {
    super(trx);
  }

  /** Reads a tenant's passport and locks its row until the transaction ends. */
  lockForUpdate(t: Tenant, id: string): Promise<PassportRow | undefined> {
    return lockById.takeFirst(this.trx, { org: t.organizationId, livemode: t.livemode, id });
  }

  /** See insertPassportWithEvent. */
  createPassport(t: Tenant, p: NewPassportRow, event: PendingEvent): Promise<PassportRow | undefined> {
    return insertPassportWithEvent(this.trx, t, p, event);
  }

  /**
   * Writes a change only if the passport is still at the version read (`WHERE version = <read>`), moving
   * version and updated_at, and records `event` for it in the outbox, in one statement (its created_at is the
   * transaction's time, the new updated_at). Undefined when no row of the tenant has that id and version (nothing
   * written, no event). UniqueConflict("external_id") when another passport of the tenant has the new external_id.
   */
  async updateVersioned(
    t: Tenant,
    id: string,
    version: number,
    change: PassportChange,
    event: PendingEvent,
  ): Promise<PassportRow | undefined> {
    const c = change;
    const update = this.trx
      .updateTable("passport")
      // Undefined members are left out of SET.
      .set({
        status: c.status,
        gtin: c.gtin,
        serial_number: c.serial_number,
        external_id: c.external_id,
        data: c.data === undefined ? undefined : JSON.stringify(c.data),
        published_at: c.published_at === undefined ? undefined : now,
        trashed_at: c.trashed_at === undefined ? undefined : c.trashed_at === "now" ? now : null,
        version: sql<number>`version + 1`,
        updated_at: now,
      })
      .where("organization_id", "=", t.organizationId)
      .where("livemode", "=", t.livemode)
      .where("id", "=", id)
      .where("version", "=", version)
      .returningAll();
    const { rows } = await uniqueConflicts(
      sql<PassportRow>`
        with written as (${update}), outbox_row as (${outboxInsert(event, "written")})
        select * from written`.execute(this.trx),
    );
    return rows[0];
  }

  /**
   * Inserts every claim of a batch whose GTINs nobody holds, the common case, without the conflict check of
   * insertClaims (`on conflict do nothing` costs each row a check of the key before its insert: a quarter of the
   * statement): true when all were inserted; false, with nothing inserted, when a GTIN was held already (the
   * statement runs in a savepoint, rolled back on the unique violation). The passport and the role are one
   * parameter each when the whole batch shares them, as a variant batch does.
   */
  async insertFreshClaims(t: Tenant, claims: ClaimRow[]): Promise<boolean> {
    const first = claims[0];
    if (!first) return true;
    const shared = claims.every((c) => c.passport_id === first.passport_id && c.role === first.role);
    await sql`savepoint fresh_claims`.execute(this.trx);
    try {
      await (
        shared
          ? sql`
          insert into gtin_claim (organization_id, livemode, gtin, passport_id, role, owner_id)
          select ${t.organizationId}, ${t.livemode}, c.gtin, ${first.passport_id}, ${first.role}, c.owner_id
          from unnest(${claims.map((c) => c.gtin)}::text[], ${claims.map((c) => c.owner_id)}::text[]) as c(gtin, owner_id)`
          : sql`
          insert into gtin_claim (organization_id, livemode, gtin, passport_id, role, owner_id)
          select ${t.organizationId}, ${t.livemode}, c.gtin, c.passport_id, c.role, c.owner_id
          from unnest(${claims.map((c) => c.gtin)}::text[], ${claims.map((c) => c.passport_id)}::text[],
            ${claims.map((c) => c.role)}::text[], ${claims.map((c) => c.owner_id)}::text[])
            as c(gtin, passport_id, role, owner_id)`
      ).execute(this.trx);
      return true;
    } catch (err) {
      if (!isUniqueViolation(err, "gtin_claim_pk")) throw err;
      await sql`rollback to savepoint fresh_claims`.execute(this.trx);
      return false;
    }
  }

  /**
   * Inserts the claims whose GTIN nobody holds in the tenant; returns the GTINs inserted. One statement from
   * arrays (`unnest`), whatever the batch's size: one statement text, so one prepared plan, and one parameter per
   * column rather than one per value.
   */
  async insertClaims(t: Tenant, claims: ClaimRow[]): Promise<string[]> {
    const { rows } = await sql<{ gtin: string }>`
      insert into gtin_claim (organization_id, livemode, gtin, passport_id, role, owner_id)
      select ${t.organizationId}, ${t.livemode}, c.gtin, c.passport_id, c.role, c.owner_id
      from unnest(${claims.map((c) => c.gtin)}::text[], ${claims.map((c) => c.passport_id)}::text[],
        ${claims.map((c) => c.role)}::text[], ${claims.map((c) => c.owner_id)}::text[])
        as c(gtin, passport_id, role, owner_id)
      on conflict (organization_id, livemode, gtin) do nothing
      returning gtin`.execute(this.trx);
    return rows.map((r) => r.gtin);
  }

  async deleteLeadClaim(t: Tenant, gtin: string, passportId: string): Promise<void> {
    await this.trx
      .deleteFrom("gtin_claim")
      .where("organization_id", "=", t.organizationId)
      .where("livemode", "=", t.livemode)
      .where("gtin", "=", gtin)
      .where("passport_id", "=", passportId)
      .where("role", "=", "lead")
      .execute();
  }

  async insertPublishApproval(t: Tenant, a: NewPublishApproval): Promise<void> {
    await this.trx
      .insertInto("publish_approval")
      .values({
        organization_id: t.organizationId,
        livemode: t.livemode,
        id: a.id,
        passport_id: a.passport_id,
        passport_version: a.passport_version,
        requested_by_key_id: a.requested_by_key_id,
        variant_review_fingerprint: a.variant_review_fingerprint,
      })
      .execute();
  }

  /** Locks a tenant's proposal until the transaction ends. */
  lockProposal(t: Tenant, id: string): Promise<ProposalRow | undefined> {
    return this.trx
      .selectFrom("proposal")
      .selectAll()
      .where("organization_id", "=", t.organizationId)
      .where("livemode", "=", t.livemode)
      .where("id", "=", id)
      .forUpdate()
      .executeTakeFirst();
  }

  /** Locks a tenant's publish approval until the transaction ends. */
  lockPublishApproval(t: Tenant, id: string): Promise<PublishApprovalRow | undefined> {
    return this.trx
      .selectFrom("publish_approval")
      .selectAll()
      .where("organization_id", "=", t.organizationId)
      .where("livemode", "=", t.livemode)
      .where("id", "=", id)
      .forUpdate()
      .executeTakeFirst();
  }

  insertProposal(t: Tenant, p: NewProposal): Promise<ProposalRow> {
    return this.trx
      .insertInto("proposal")
      .values({
        organization_id: t.organizationId,
        livemode: t.livemode,
        id: p.id,
        passport_id: p.passport_id,
        passport_version: p.passport_version,
        fields: JSON.stringify(p.fields),
        base: JSON.stringify(p.base),
        requested_by_key_id: p.requested_by_key_id,
        expires_at: sql<Date>`now() + make_interval(days => ${p.lifetime_days})`,
      })
      .returningAll()
      .executeTakeFirstOrThrow();
  }

  /** Moves a proposal out of pending: its new state, decided now by `decidedBy` (null: its proposer). */
  decideProposal(t: Tenant, id: string, state: string, decidedBy: string | null): Promise<ProposalRow> {
    return this.trx
      .updateTable("proposal")
      .set({ state, decided_at: now, decided_by: decidedBy })
      .where("organization_id", "=", t.organizationId)
      .where("livemode", "=", t.livemode)
      .where("id", "=", id)
      .returningAll()
      .executeTakeFirstOrThrow();
  }

  decidePublishApproval(
    t: Tenant,
    id: string,
    state: string,
    decidedBy: string,
  ): Promise<PublishApprovalRow> {
    return this.trx
      .updateTable("publish_approval")
      .set({ state, decided_at: now, decided_by: decidedBy })
      .where("organization_id", "=", t.organizationId)
      .where("livemode", "=", t.livemode)
      .where("id", "=", id)
      .returningAll()
      .executeTakeFirstOrThrow();
  }

  async insertValidation(t: Tenant, v: NewValidation): Promise<void> {
    await this.trx
      .insertInto("validation")
      .values({
        organization_id: t.organizationId,
        livemode: t.livemode,
        id: v.id,
        passport_id: v.passport_id,
        passport_version: v.passport_version,
        valid: v.valid,
        publishable: v.publishable,
        record: JSON.stringify(v.record),
        checked_at: v.checked_at,
      })
      .execute();
  }

  /**
   * Deletes up to `limit` test passports, of every organization, last changed more than `days` days ago (oldest
   * first); returns them. The one query that spans tenants: the retention sweep over test data.
   */
  deleteTestPassportsPastRetention(days: number, limit: number): Promise<PassportRow[]> {
    return this.trx
      .deleteFrom("passport")
      .where("livemode", "=", false)
      .where((eb) =>
        eb.and([
          eb("updated_at", "<", sql<Date>`now() - make_interval(days => ${days})`),
          eb(
            sql.ref("id"),
            "in",
            eb
              .selectFrom("passport as q")
              .select("q.id")
              .where("q.livemode", "=", false)
              .where("q.updated_at", "<", sql<Date>`now() - make_interval(days => ${days})`)
              .orderBy("q.updated_at")
              .limit(limit),
          ),
        ]),
      )
      .returningAll()
      .execute();
  }

  /** Deletes a passport's GTIN claims, validation records, publish approvals and proposals. */
  async deleteDependents(t: Tenant, passportId: string): Promise<void> {
    for (const table of ["gtin_claim", "validation", "publish_approval", "proposal"] as const)
      await this.trx
        .deleteFrom(table)
        .where("organization_id", "=", t.organizationId)
        .where("livemode", "=", t.livemode)
        .where("passport_id", "=", passportId)
        .execute();
  }

  /** Records a domain event in this transaction's outbox: published only if the transaction commits. */
  appendEvent(event: DomainEvent): Promise<void> {
    return writeOutbox(this.trx, event);
  }
}

/** A domain event to record with the write that causes it: its created_at is the transaction's time (outboxInsert). */
export type PendingEvent = Omit<DomainEvent, "created_at">;

/**
 * Inserts a draft at version 1 and records `event` (its passport.created) in the outbox, in one statement: the
 * row's created_at and the event's are both the transaction's time. Undefined when the tenant already has a
 * passport with this external_id: nothing is written and the statement does not fail, so a transaction (or an
 * idempotent call) it runs in goes on.
 */
export async function insertPassportWithEvent(
  q: Kysely<PassportDB>,
  t: Tenant,
  p: NewPassportRow,
  event: PendingEvent,
): Promise<PassportRow | undefined> {
  const { rows } = await sql<PassportRow>`
    with written as (
      insert into passport (organization_id, livemode, id, category, status, gtin, serial_number, external_id, data)
      values (${t.organizationId}, ${t.livemode}, ${p.id}, ${p.category}, 'draft', ${p.gtin}, ${p.serial_number},
              ${p.external_id}, ${JSON.stringify(p.data)}::jsonb)
      on conflict on constraint passport_external_id_uq do nothing
      returning *),
    outbox_row as (${outboxInsert(event, "written")})
    select * from written`.execute(q);
  return rows[0];
}

async function uniqueConflicts<T>(write: Promise<T>): Promise<T> {
  try {
    return await write;
  } catch (err) {
    if (isUniqueViolation(err, "passport_external_id_uq")) throw new UniqueConflict("external_id");
    throw err;
  }
}
