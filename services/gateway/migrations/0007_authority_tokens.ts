import { sql, type Kysely } from "kysely";

/**
 * Authority tokens (docs/decisions/0058-authority-credential.md): an inspector's credential, issued by an operator,
 * bound to one organization and mode, expiring, read only on that organization's authority-tier files. Kept as the
 * SHA-256 of its text and its last four characters, as an API key is.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable("authority_token")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("organization_id", "text", (c) => c.notNull().references("organization.id"))
    .addColumn("livemode", "boolean", (c) => c.notNull())
    .addColumn("name", "text", (c) => c.notNull())
    .addColumn("secret_digest", "text", (c) => c.notNull().unique())
    .addColumn("last4", "text", (c) => c.notNull())
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("expires_at", "timestamptz", (c) => c.notNull())
    .addColumn("revoked_at", "timestamptz")
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable("authority_token").execute();
}
