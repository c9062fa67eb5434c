import { sql, type Kysely } from "kysely";

/**
 * A page of passports by status is read in the list's order (newest id first) from one index, never sorted:
 * the status index carries the id. It replaces the status index without it, which every query of that index
 * (the publish slot count) still uses through its leading columns.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createIndex("passport_status_id_idx")
    .on("passport")
    .columns(["organization_id", "livemode", "status", "id"])
    .execute();
  await sql`drop index if exists passport_status_idx`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema
    .createIndex("passport_status_idx")
    .on("passport")
    .columns(["organization_id", "livemode", "status"])
    .execute();
  await db.schema.dropIndex("passport_status_id_idx").execute();
}
