import { sql, type Kysely } from "kysely";

/** Lifecycle support: publish approvals, validation records, and indexes for slots, claims and retention. */
export async function up(db: Kysely<any>): Promise<void> {
  // Publish requests by connector credentials waiting for a person (human_approval_required).
  await db.schema
    .createTable("publish_approval")
    .addColumn("organization_id", "text", (c) => c.notNull())
    .addColumn("livemode", "boolean", (c) => c.notNull())
    .addColumn("id", "text", (c) => c.notNull())
    .addColumn("passport_id", "text", (c) => c.notNull())
    .addColumn("passport_version", "integer", (c) => c.notNull())
    .addColumn("requested_by_key_id", "text")
    .addColumn("variant_review_fingerprint", "text")
    .addColumn("state", "text", (c) => c.notNull().defaultTo("pending"))
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint("publish_approval_pk", ["organization_id", "livemode", "id"])
    .execute();
  await db.schema
    .createIndex("publish_approval_passport_idx")
    .on("publish_approval")
    .columns(["organization_id", "livemode", "passport_id"])
    .execute();

  // Validation records kept when POST validate is not a dry run.
  await db.schema
    .createTable("validation")
    .addColumn("organization_id", "text", (c) => c.notNull())
    .addColumn("livemode", "boolean", (c) => c.notNull())
    .addColumn("id", "text", (c) => c.notNull())
    .addColumn("passport_id", "text", (c) => c.notNull())
    .addColumn("passport_version", "integer", (c) => c.notNull())
    .addColumn("valid", "boolean", (c) => c.notNull())
    .addColumn("publishable", "boolean", (c) => c.notNull())
    .addColumn("record", "jsonb", (c) => c.notNull())
    .addColumn("checked_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint("validation_pk", ["organization_id", "livemode", "id"])
    .execute();
  await db.schema
    .createIndex("validation_passport_idx")
    .on("validation")
    .columns(["organization_id", "livemode", "passport_id"])
    .execute();

  await db.schema
    .createIndex("passport_status_idx")
    .on("passport")
    .columns(["organization_id", "livemode", "status"])
    .execute();
  await db.schema
    .createIndex("gtin_claim_passport_idx")
    .on("gtin_claim")
    .columns(["organization_id", "livemode", "passport_id"])
    .execute();
  // The retention job scans test passports across tenants by last edit.
  await sql`create index passport_test_retention_idx on passport (updated_at) where livemode = false`.execute(
    db,
  );
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop index if exists passport_test_retention_idx`.execute(db);
  await db.schema.dropIndex("gtin_claim_passport_idx").execute();
  await db.schema.dropIndex("passport_status_idx").execute();
  await db.schema.dropTable("validation").execute();
  await db.schema.dropTable("publish_approval").execute();
}
