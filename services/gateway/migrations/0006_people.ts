import { sql, type Kysely } from "kysely";

/**
 * People of an organization who sign in to the review page (docs/decisions/0057): not API keys. A password is
 * kept as its scrypt hash; a session as the SHA-256 of its cookie value, with the CSRF token its forms carry.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable("person")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("organization_id", "text", (c) => c.notNull().references("organization.id"))
    .addColumn("email", "text", (c) => c.notNull())
    .addColumn("name", "text", (c) => c.notNull())
    .addColumn("password_hash", "text", (c) => c.notNull())
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addUniqueConstraint("person_email_uq", ["email"])
    .execute();
  await db.schema
    .createTable("review_session")
    .addColumn("digest", "text", (c) => c.primaryKey())
    .addColumn("person_id", "text", (c) => c.notNull().references("person.id").onDelete("cascade"))
    .addColumn("csrf_token", "text", (c) => c.notNull())
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("expires_at", "timestamptz", (c) => c.notNull())
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable("review_session").execute();
  await db.schema.dropTable("person").execute();
}
