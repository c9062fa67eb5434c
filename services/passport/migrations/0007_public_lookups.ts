import { sql, type Kysely } from "kysely";

/**
 * The public surface's reads (docs/decisions/0059-public-surface.md): a live passport shown publicly by its id
 * alone and a live GTIN claim by its GTIN alone, across organizations (a public page or a scan names no tenant).
 * Partial indexes on the rows those reads may return. The passport index is a hash index (equality only, no
 * order) whose predicate names the public statuses, so that no tenant read can be planned on it: a tenant's list in
 * id order would otherwise walk every organization's live passports through it.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`create index passport_public_id_idx on passport using hash (id)
    where livemode and status in ('published', 'readonly')`.execute(db);
  await sql`create index gtin_claim_public_idx on gtin_claim (gtin) where livemode`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex("gtin_claim_public_idx").execute();
  await db.schema.dropIndex("passport_public_id_idx").execute();
}
