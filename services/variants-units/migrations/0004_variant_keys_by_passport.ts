import { sql, type Kysely } from "kysely";

/**
 * A variant's unique keys start at its passport: (passport_id, gtin) and (passport_id, pair_key) instead of the same
 * keys behind the organization and the mode (docs/decisions/0067-variant-write-path.md). A passport's id is
 * generated (80 random bits) and names one passport of one organization and mode, so the key is the same rule; its
 * entries are about half as wide, which every row of a batch writes twice. Every query still filters organization
 * and mode (the index finds the passport's rows, the filter keeps the tenant's).
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`create unique index if not exists variant_passport_gtin_key on variant (passport_id, gtin)`.execute(
    db,
  );
  await sql`create unique index if not exists variant_passport_pair_key on variant (passport_id, pair_key)`.execute(
    db,
  );
  await sql`drop index if exists variant_gtin_key`.execute(db);
  await sql`drop index if exists variant_pair_key`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`create unique index if not exists variant_gtin_key on variant (organization_id, livemode, passport_id, gtin)`.execute(
    db,
  );
  await sql`create unique index if not exists variant_pair_key on variant (organization_id, livemode, passport_id, pair_key)`.execute(
    db,
  );
  await sql`drop index if exists variant_passport_gtin_key`.execute(db);
  await sql`drop index if exists variant_passport_pair_key`.execute(db);
}
