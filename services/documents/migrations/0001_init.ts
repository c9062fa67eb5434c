import { sql, type Kysely } from "kysely";

/**
 * The library (document), the links to passports and the records that depend on a linked document. The kit's
 * tables (keyed writes' results, events) are made by the template's migrate from the definition's `idempotency`
 * and `outbox`.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable("document")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("organization_id", "text", (c) => c.notNull())
    .addColumn("livemode", "boolean", (c) => c.notNull())
    .addColumn("type", "text", (c) => c.notNull())
    .addColumn("access_tier", "text", (c) => c.notNull())
    .addColumn("file_name", "text", (c) => c.notNull())
    .addColumn("display_name", "text", (c) => c.notNull())
    .addColumn("mime_type", "text", (c) => c.notNull())
    .addColumn("file_size", "bigint")
    .addColumn("upload_state", "text", (c) => c.notNull().check(sql`upload_state in ('pending', 'ready')`))
    .addColumn("uploaded_at", "timestamptz")
    .addColumn("upload_expires_at", "timestamptz", (c) => c.notNull())
    .addColumn("storage_key", "text", (c) => c.notNull())
    .addColumn("problem_code", "text")
    .addColumn("problem_message", "text")
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema
    .createIndex("document_tenant_id_idx")
    .on("document")
    .columns(["organization_id", "livemode", "id desc"])
    .execute();
  await sql`create index document_pending_idx on document (upload_expires_at) where upload_state = 'pending'`.execute(
    db,
  );

  await db.schema
    .createTable("document_link")
    .addColumn("organization_id", "text", (c) => c.notNull())
    .addColumn("livemode", "boolean", (c) => c.notNull())
    .addColumn("passport_id", "text", (c) => c.notNull())
    .addColumn("document_id", "text", (c) => c.notNull().references("document.id").onDelete("cascade"))
    .addColumn("linked_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint("document_link_pk", [
      "organization_id",
      "livemode",
      "passport_id",
      "document_id",
    ])
    .execute();
  await db.schema
    .createIndex("document_link_document_idx")
    .on("document_link")
    .columns(["document_id"])
    .execute();

  await db.schema
    .createTable("document_dependency")
    .addColumn("organization_id", "text", (c) => c.notNull())
    .addColumn("livemode", "boolean", (c) => c.notNull())
    .addColumn("passport_id", "text", (c) => c.notNull())
    .addColumn("document_id", "text", (c) => c.notNull())
    .addColumn("kind", "text", (c) => c.notNull().check(sql`kind in ('extraction', 'reading')`))
    .addColumn("reference", "text", (c) => c.notNull())
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema
    .createIndex("document_dependency_idx")
    .on("document_dependency")
    .columns(["organization_id", "livemode", "passport_id", "document_id"])
    .execute();
}
