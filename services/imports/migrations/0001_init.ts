import { sql, type Kysely } from "kysely";

/**
 * The import table. The kit's tables (keyed writes' results, events) are made by the template's migrate from the
 * definition's `idempotency` and `outbox`.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable("import")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("organization_id", "text", (c) => c.notNull())
    .addColumn("livemode", "boolean", (c) => c.notNull())
    .addColumn("label", "text", (c) => c.notNull())
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema
    .createIndex("import_tenant_id_idx")
    .on("import")
    .columns(["organization_id", "livemode", "id desc"])
    .execute();
}
