import { sql, type Kysely } from "kysely";

/**
 * Import jobs and their rows (docs/decisions/0053-imports-jobs-rows-and-per-row-keys.md). A job's lease
 * (lease_owner, lease_expires_at) is held by the worker running one batch of it; turn_at orders the jobs that
 * wait for a worker (round-robin). The kit's tables (keyed writes' results, events) are made by the template's
 * migrate from the definition's `idempotency` and `outbox`.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable("job")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("organization_id", "text", (c) => c.notNull())
    .addColumn("livemode", "boolean", (c) => c.notNull())
    .addColumn("status", "text", (c) => c.notNull())
    .addColumn("total_rows", "integer", (c) => c.notNull())
    .addColumn("succeeded_rows", "integer", (c) => c.notNull().defaultTo(0))
    .addColumn("failed_rows", "integer", (c) => c.notNull().defaultTo(0))
    .addColumn("attempts", "integer", (c) => c.notNull().defaultTo(0))
    // The signed context of the POST the rows are created under (key, credential kind, plan): JSON.
    .addColumn("context", "jsonb", (c) => c.notNull())
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("started_at", "timestamptz")
    .addColumn("completed_at", "timestamptz")
    .addColumn("turn_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("retry_at", "timestamptz")
    .addColumn("lease_owner", "text")
    .addColumn("lease_expires_at", "timestamptz")
    .execute();
  await db.schema
    .createIndex("job_tenant_id_idx")
    .on("job")
    .columns(["organization_id", "livemode", "id desc"])
    .execute();
  await sql`create index job_waiting_idx on job (organization_id, turn_at)
    where status in ('queued', 'running')`.execute(db);
  await db.schema
    .createTable("job_row")
    .addColumn("job_id", "text", (c) => c.notNull().references("job.id").onDelete("cascade"))
    .addColumn("row_index", "integer", (c) => c.notNull())
    .addColumn("organization_id", "text", (c) => c.notNull())
    .addColumn("livemode", "boolean", (c) => c.notNull())
    .addColumn("category", "text", (c) => c.notNull())
    .addColumn("external_id", "text")
    // The row's data exactly as sent (JSON text: its key order and numbers unchanged).
    .addColumn("data_json", "text", (c) => c.notNull())
    .addColumn("status", "text", (c) => c.notNull().defaultTo("pending"))
    .addColumn("passport_id", "text")
    .addColumn("error", "jsonb")
    .addColumn("processed_at", "timestamptz")
    .addPrimaryKeyConstraint("job_row_pkey", ["job_id", "row_index"])
    .execute();
  await sql`create index job_row_pending_idx on job_row (job_id, row_index) where status = 'pending'`.execute(
    db,
  );
}
