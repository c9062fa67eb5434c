import { sql, type Kysely } from "kysely";

/**
 * A variant row keeps three indexes: its id (the primary key), its GTIN and its size/colour pair within the passport
 * (docs/decisions/0067-variant-indexes.md). The list index (passport, seq) and the reconciler's (seq) go: every batch
 * of 1000 paid for both, while a passport's list page sorts at most 2000 rows (the per-passport limit) found by the
 * GTIN index's passport prefix, and the reconciler pages through the rows in id order.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`drop index if exists variant_list_idx`.execute(db);
  await sql`drop index if exists variant_seq_idx`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`create index if not exists variant_list_idx on variant (organization_id, livemode, passport_id, seq)`.execute(
    db,
  );
  await sql`create index if not exists variant_seq_idx on variant (seq)`.execute(db);
}
