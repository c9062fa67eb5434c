import { sql, type Kysely } from "kysely";

/**
 * The endpoints (with their delivery position and lease) and their delivery attempts. The kit's tables (keyed
 * writes' results, events) are made by the template's migrate from the definition's `idempotency` and `outbox`.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable("endpoint")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("organization_id", "text", (c) => c.notNull())
    .addColumn("livemode", "boolean", (c) => c.notNull())
    .addColumn("url", "text", (c) => c.notNull())
    .addColumn("description", "text", (c) => c.notNull())
    .addColumn("types", sql`text[]`, (c) => c.notNull())
    .addColumn("enabled", "boolean", (c) => c.notNull())
    .addColumn("disabled_reason", "text")
    .addColumn("secret", "text", (c) => c.notNull())
    .addColumn("previous_secret", "text")
    .addColumn("previous_secret_expires_at", "timestamptz")
    // Delivery: the feed sequence delivered up to, when to try next, and who holds the endpoint's delivery.
    .addColumn("delivered_sequence", "bigint", (c) => c.notNull())
    .addColumn("next_attempt_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("failed_attempts", "integer", (c) => c.notNull().defaultTo(0))
    .addColumn("failing_since", "timestamptz")
    .addColumn("lease_owner", "text")
    .addColumn("lease_until", "timestamptz")
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("updated_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema
    .createIndex("endpoint_tenant_id_idx")
    .on("endpoint")
    .columns(["organization_id", "livemode", "id desc"])
    .execute();
  // The delivery workers' lease query: enabled endpoints due now.
  await sql`create index endpoint_due_idx on endpoint (next_attempt_at) where enabled`.execute(db);

  await db.schema
    .createTable("attempt")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("endpoint_id", "text", (c) => c.notNull().references("endpoint.id").onDelete("cascade"))
    .addColumn("organization_id", "text", (c) => c.notNull())
    .addColumn("livemode", "boolean", (c) => c.notNull())
    .addColumn("webhook_id", "text", (c) => c.notNull())
    .addColumn("event_id", "text", (c) => c.notNull())
    .addColumn("event_type", "text", (c) => c.notNull())
    .addColumn("sequence", "bigint")
    .addColumn("next_cursor", "text")
    .addColumn("kind", "text", (c) => c.notNull())
    .addColumn("status", "text", (c) => c.notNull())
    .addColumn("response_status", "integer")
    .addColumn("error", "text")
    .addColumn("latency_ms", "integer", (c) => c.notNull())
    .addColumn("attempted_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("next_retry_at", "timestamptz")
    .execute();
  await db.schema
    .createIndex("attempt_endpoint_id_idx")
    .on("attempt")
    .columns(["organization_id", "livemode", "endpoint_id", "id desc"])
    .execute();
  // The retention job's scan.
  await db.schema.createIndex("attempt_attempted_at_idx").on("attempt").column("attempted_at").execute();
}
