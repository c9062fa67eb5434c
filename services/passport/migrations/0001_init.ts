import { sql, type Kysely } from "kysely";

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable("passport")
    .addColumn("organization_id", "text", (c) => c.notNull())
    .addColumn("livemode", "boolean", (c) => c.notNull())
    .addColumn("id", "text", (c) => c.notNull())
    .addColumn("category", "text", (c) => c.notNull())
    .addColumn("status", "text", (c) => c.notNull())
    .addColumn("gtin", "text")
    .addColumn("serial_number", "text")
    .addColumn("external_id", "text")
    .addColumn("version", "integer", (c) => c.notNull().defaultTo(1))
    .addColumn("registry_id", "text")
    .addColumn("data", "jsonb", (c) => c.notNull().defaultTo(sql`'{}'::jsonb`))
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("updated_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("published_at", "timestamptz")
    .addColumn("trashed_at", "timestamptz")
    .addPrimaryKeyConstraint("passport_pk", ["organization_id", "livemode", "id"])
    .addUniqueConstraint("passport_external_id_uq", ["organization_id", "livemode", "external_id"])
    .execute();
  await db.schema
    .createIndex("passport_updated_idx")
    .on("passport")
    .columns(["organization_id", "livemode", "updated_at"])
    .execute();

  // One owner per GTIN within (organization, mode): passport lead GTINs and variant GTINs.
  await db.schema
    .createTable("gtin_claim")
    .addColumn("organization_id", "text", (c) => c.notNull())
    .addColumn("livemode", "boolean", (c) => c.notNull())
    .addColumn("gtin", "text", (c) => c.notNull())
    .addColumn("passport_id", "text", (c) => c.notNull())
    .addColumn("role", "text", (c) => c.notNull().check(sql`role in ('lead', 'variant')`))
    .addColumn("owner_id", "text", (c) => c.notNull())
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint("gtin_claim_pk", ["organization_id", "livemode", "gtin"])
    .execute();

  // The outbox is the kit's: the service template creates it (`outbox: true`), before this migration runs. This
  // migration created it until then; databases migrated since keep it as it was made.
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const t of ["gtin_claim", "passport"]) await db.schema.dropTable(t).execute();
}
