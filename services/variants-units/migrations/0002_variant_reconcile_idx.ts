import { sql, type Kysely } from "kysely";

/** The reconciler's scan (src/app/reconcile.ts): every tenant's variants in insertion order, a page at a time. */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`create index variant_seq_idx on variant (seq)`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop index if exists variant_seq_idx`.execute(db);
}
