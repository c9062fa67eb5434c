import { sql, type Kysely } from "kysely";

/**
 * The public surface's reads (docs/decisions/0058-public-surface.md): a live passport by its id alone and a live
 * GTIN claim by its GTIN alone, across organizations (a public page or a scan names no tenant). Partial indexes on
 * the live rows, the only ones those reads may return.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`create index passport_public_id_idx on passport (id) where livemode`.execute(db);
  await sql`create index gtin_claim_public_idx on gtin_claim (gtin) where livemode`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex("gtin_claim_public_idx").execute();
  await db.schema.dropIndex("passport_public_id_idx").execute();
}
