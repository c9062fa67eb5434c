import { sql, type Kysely } from "kysely";

/**
 * The reconciler of reading dependencies (src/app/dependency-reconciler.ts) pages through the `reading`
 * dependencies in (organization, mode, reference) order: a partial index on exactly those rows.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`create index document_dependency_reading_idx on document_dependency (organization_id, livemode, reference)
    where kind = 'reading'`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex("document_dependency_reading_idx").execute();
}
