import { sql, type Kysely } from "kysely";
import { transaction } from "@dpp/kit";
import type { PassportDB } from "./schema";
import { PassportReads } from "./passport-reads";
import { PassportTx } from "./passport-tx";
import type { Tenant } from "./types";

/** The store on the pool: reads, single-statement writes, and transactions. */
export class PassportStore extends PassportReads {
  constructor(db: Kysely<PassportDB>) {
    super(db);
  }

  /**
   * Runs fn in one transaction: committed when fn returns, rolled back when it throws. Inside a call under
   * an Idempotency-Key it is part of the call's transaction, which also records the result (kit).
   */
  transaction<T>(fn: (tx: PassportTx) => Promise<T>): Promise<T> {
    return transaction(this.db, (trx) => fn(new PassportTx(trx)));
  }

  /** Deletes the variant claims held by these (gtin, owner) pairs; returns the GTINs deleted. */
  async releaseVariantClaims(t: Tenant, releases: { gtin: string; owner_id: string }[]): Promise<string[]> {
    const { rows } = await sql<{ gtin: string }>`
      delete from gtin_claim c using unnest(${releases.map((r) => r.gtin)}::text[], ${releases.map((r) => r.owner_id)}::text[]) as r(gtin, owner_id)
      where c.organization_id = ${t.organizationId} and c.livemode = ${t.livemode} and c.role = 'variant'
        and c.gtin = r.gtin and c.owner_id = r.owner_id
      returning c.gtin`.execute(this.db);
    return rows.map((r) => r.gtin);
  }
}
