import { sql, type Kysely } from "kysely";

/**
 * Idempotency records (24 h, reaped), the organization-level affichage
 * delegation shown by GET .../capabilities, and a notification channel that
 * evicts revoked keys from every gateway's key cache.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable("idempotency_record")
    .addColumn("id", "bigserial", (c) => c.primaryKey())
    // The scope: organization in the path, mode, calling key's organization, Idempotency-Key.
    .addColumn("organization_id", "text", (c) => c.notNull())
    .addColumn("livemode", "boolean", (c) => c.notNull())
    .addColumn("caller_organization_id", "text", (c) => c.notNull())
    .addColumn("idempotency_key", "text", (c) => c.notNull())
    // SHA-256 of method, path and canonical body.
    .addColumn("fingerprint", "text", (c) => c.notNull())
    .addColumn("method", "text", (c) => c.notNull())
    .addColumn("path", "text", (c) => c.notNull())
    .addColumn("state", "text", (c) => c.notNull().check(sql`state in ('in_flight', 'finished')`))
    // An in-flight claim older than this was abandoned (a gateway died) and may be taken over.
    .addColumn("locked_until", "timestamptz", (c) => c.notNull())
    .addColumn("response_status", "integer")
    // Text, not jsonb: jsonb would reorder the keys of a body that must replay byte for byte.
    .addColumn("response_body", "text")
    .addColumn("response_headers", "jsonb")
    .addColumn("request_id", "text", (c) => c.notNull())
    .addColumn("key_id", "text")
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("finished_at", "timestamptz")
    .addUniqueConstraint("idempotency_record_scope_uq", [
      "organization_id",
      "livemode",
      "caller_organization_id",
      "idempotency_key",
    ])
    .execute();
  await db.schema
    .createIndex("idempotency_record_created_idx")
    .on("idempotency_record")
    .column("created_at")
    .execute();

  // France affichage delegation of the organization (to the portal); "none" until requested.
  await db.schema
    .alterTable("organization")
    .addColumn("affichage_delegation_status", "text", (c) =>
      c
        .notNull()
        .defaultTo("none")
        .check(sql`affichage_delegation_status in ('none', 'pending', 'active', 'revoked')`),
    )
    .addColumn("affichage_portal_brand_id", "text")
    .addColumn("affichage_delegated_at", "timestamptz")
    .execute();

  await db.schema.createIndex("grant_org_idx").on("grant").columns(["organization_id"]).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex("grant_org_idx").execute();
  await db.schema
    .alterTable("organization")
    .dropColumn("affichage_delegation_status")
    .dropColumn("affichage_portal_brand_id")
    .dropColumn("affichage_delegated_at")
    .execute();
  await db.schema.dropTable("idempotency_record").execute();
}
