import { sql, type Kysely } from "kysely";

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable("organization")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("name", "text", (c) => c.notNull())
    .addColumn("plan_id", "text", (c) => c.notNull().defaultTo("trial"))
    .addColumn("subscription_status", "text", (c) => c.notNull().defaultTo("trialing"))
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .execute();

  await db.schema
    .createTable("api_key")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("organization_id", "text", (c) => c.notNull().references("organization.id"))
    .addColumn("livemode", "boolean", (c) => c.notNull())
    .addColumn("kind", "text", (c) => c.notNull().check(sql`kind in ('secret', 'connector')`))
    .addColumn("name", "text", (c) => c.notNull())
    .addColumn("scopes", sql`text[]`, (c) => c.notNull())
    // SHA-256 of the full key text; the key itself is never stored.
    .addColumn("secret_digest", "text", (c) => c.notNull().unique())
    .addColumn("last4", "text", (c) => c.notNull())
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("expires_at", "timestamptz")
    .addColumn("revoked_at", "timestamptz")
    .addColumn("rotated_at", "timestamptz")
    .addColumn("rotation_overlap_ends_at", "timestamptz")
    .addColumn("replaced_by_key_id", "text")
    .execute();
  await db.schema
    .createIndex("api_key_org_idx")
    .on("api_key")
    .columns(["organization_id", "livemode"])
    .execute();

  // A managing organization acts for a client organization.
  await db.schema
    .createTable("managed_link")
    .addColumn("manager_organization_id", "text", (c) => c.notNull().references("organization.id"))
    .addColumn("client_organization_id", "text", (c) => c.notNull().references("organization.id"))
    .addColumn("status", "text", (c) => c.notNull().check(sql`status in ('accepted', 'ended')`))
    .addColumn("france_mandate_confirmed_at", "timestamptz")
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("ended_at", "timestamptz")
    .addPrimaryKeyConstraint("managed_link_pk", ["manager_organization_id", "client_organization_id"])
    .execute();

  // A key of the managing organization reaches a client through a grant.
  await db.schema
    .createTable("grant")
    .addColumn("key_id", "text", (c) => c.notNull().references("api_key.id"))
    .addColumn("organization_id", "text", (c) => c.notNull().references("organization.id"))
    .addColumn("scopes", sql`text[]`, (c) => c.notNull())
    .addColumn("granted_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("revoked_at", "timestamptz")
    .addPrimaryKeyConstraint("grant_pk", ["key_id", "organization_id"])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const t of ["grant", "managed_link", "api_key", "organization"])
    await db.schema.dropTable(t).execute();
}
