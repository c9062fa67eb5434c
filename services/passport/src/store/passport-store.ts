import { sql, type Kysely } from "kysely";
import { singleStatement, transaction, type CallScope, type TenantContext } from "@dpp/kit";
import type { PassportDB } from "./schema";
import { PassportReads } from "./passport-reads";
import { insertPassportWithEvent, PassportTx, type PendingEvent } from "./passport-tx";
import type { NewPassportRow, PassportRow } from "./types";

/** Where a page of the claims reconciler stopped: the claims' primary key. */
export interface ClaimPosition {
  organization_id: string;
  livemode: boolean;
  gtin: string;
}

/** The store on the pool: reads, single-statement writes, and transactions. */
export class PassportStore extends PassportReads {
  constructor(db: Kysely<PassportDB>) {
    super(db);
  }

  /**
   * Runs fn in one transaction: committed when fn returns, rolled back when it throws. Opened for the context
   * of a call under an Idempotency-Key, it is part of the call's transaction, which also records the result
   * (kit); `null` outside any call (a job).
   */
  transaction<T>(call: CallScope, fn: (tx: PassportTx) => Promise<T>): Promise<T> {
    return transaction(this.db, call, (trx) => fn(new PassportTx(trx)));
  }

  /**
   * A draft and its passport.created, written by one statement that is a transaction of its own (no begin, no
   * commit; inside an idempotent call, part of the call's transaction). See insertPassportWithEvent.
   */
  createPassport(t: TenantContext, p: NewPassportRow, event: PendingEvent): Promise<PassportRow | undefined> {
    return singleStatement(this.db, t, (q) => insertPassportWithEvent(q, t, p, event));
  }

  /**
   * Deletes the variant claims held by these (gtin, owner) pairs; returns the GTINs deleted. One statement (inside
   * an idempotent call, part of the call's transaction).
   */
  async releaseVariantClaims(
    t: TenantContext,
    releases: { gtin: string; owner_id: string }[],
  ): Promise<string[]> {
    const { rows } = await singleStatement(this.db, t, (q) =>
      sql<{ gtin: string }>`
      delete from gtin_claim c using unnest(${releases.map((r) => r.gtin)}::text[], ${releases.map((r) => r.owner_id)}::text[]) as r(gtin, owner_id)
      where c.organization_id = ${t.organizationId} and c.livemode = ${t.livemode} and c.role = 'variant'
        and c.gtin = r.gtin and c.owner_id = r.owner_id
      returning c.gtin`.execute(q),
    );
    return rows.map((r) => r.gtin);
  }

  /**
   * The reconciler's page (app/gtin-reconciler.ts): variant claims of every tenant older than `graceMs`, after
   * `after` in the primary key's order. A job's scan across tenants, like the test-mode retention's.
   */
  async staleVariantClaims(
    after: ClaimPosition | undefined,
    graceMs: number,
    limit: number,
  ): Promise<(ClaimPosition & { owner_id: string })[]> {
    const from = after ?? { organization_id: "", livemode: false, gtin: "" };
    const { rows } = await sql<ClaimPosition & { owner_id: string }>`
      select organization_id, livemode, gtin, owner_id from gtin_claim
      where (organization_id, livemode, gtin) > (${from.organization_id}, ${from.livemode}, ${from.gtin})
        and role = 'variant' and created_at < now() - make_interval(secs => ${graceMs / 1000}::float8)
      order by organization_id, livemode, gtin
      limit ${limit}::int`.execute(this.db);
    return rows;
  }

  /** Deletes these variant claims of the tenant if they are still older than `graceMs`; answers how many. */
  async releaseOrphanClaims(
    t: { organizationId: string; livemode: boolean },
    claims: { gtin: string; owner_id: string }[],
    graceMs: number,
  ): Promise<number> {
    const { rows } = await sql<{ gtin: string }>`
      delete from gtin_claim c using unnest(${claims.map((r) => r.gtin)}::text[], ${claims.map((r) => r.owner_id)}::text[]) as r(gtin, owner_id)
      where c.organization_id = ${t.organizationId} and c.livemode = ${t.livemode} and c.role = 'variant'
        and c.gtin = r.gtin and c.owner_id = r.owner_id
        and c.created_at < now() - make_interval(secs => ${graceMs / 1000}::float8)
      returning c.gtin`.execute(this.db);
    return rows.length;
  }
}
