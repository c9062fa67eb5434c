import { sql, type Kysely } from "kysely";

/**
 * Change proposals on published passports (docs/decisions/0057), and who decided a publish approval and when.
 * A proposal keeps the merge patch as sent (`fields`) and, for each field it names, the passport's value when it
 * was made (`base`): a field whose value differs from its base on a later read has moved (out_of_date).
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable("proposal")
    .addColumn("organization_id", "text", (c) => c.notNull())
    .addColumn("livemode", "boolean", (c) => c.notNull())
    .addColumn("id", "text", (c) => c.notNull())
    .addColumn("passport_id", "text", (c) => c.notNull())
    .addColumn("passport_version", "integer", (c) => c.notNull())
    .addColumn("fields", "jsonb", (c) => c.notNull())
    .addColumn("base", "jsonb", (c) => c.notNull())
    .addColumn("state", "text", (c) => c.notNull().defaultTo("pending"))
    .addColumn("requested_by_key_id", "text")
    .addColumn("requested_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("expires_at", "timestamptz", (c) => c.notNull())
    .addColumn("decided_at", "timestamptz")
    .addColumn("decided_by", "text")
    .addPrimaryKeyConstraint("proposal_pk", ["organization_id", "livemode", "id"])
    .execute();
  await db.schema
    .createIndex("proposal_passport_idx")
    .on("proposal")
    .columns(["organization_id", "livemode", "passport_id"])
    .execute();
  await db.schema
    .alterTable("publish_approval")
    .addColumn("decided_at", "timestamptz")
    .addColumn("decided_by", "text")
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable("publish_approval").dropColumn("decided_at").dropColumn("decided_by").execute();
  await db.schema.dropTable("proposal").execute();
}
