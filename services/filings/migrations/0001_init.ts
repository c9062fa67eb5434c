import { sql, type Kysely } from "kysely";

/**
 * The affichage filing of each passport and the attestation each organization accepted, per mode. The kit's
 * tables (keyed writes' results and effects, events) are made by the template's migrate from the definition.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable("affichage")
    .addColumn("organization_id", "text", (c) => c.notNull())
    .addColumn("livemode", "boolean", (c) => c.notNull())
    .addColumn("passport_id", "text", (c) => c.notNull())
    .addColumn("status", "text", (c) => c.notNull())
    .addColumn("filed_at", "timestamptz", (c) => c.notNull())
    .addColumn("portal_gtin", "text", (c) => c.notNull())
    .addColumn("portal_score", "double precision", (c) => c.notNull())
    .addColumn("standardized_score", "double precision", (c) => c.notNull())
    .addColumn("durability", "double precision", (c) => c.notNull())
    .addColumn("engine_version", "text", (c) => c.notNull())
    .addColumn("declaration", "jsonb", (c) => c.notNull())
    .addColumn("filings", "integer", (c) => c.notNull().defaultTo(1))
    .addColumn("updated_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint("affichage_pkey", ["organization_id", "livemode", "passport_id"])
    .execute();
  await db.schema
    .createTable("attestation")
    .addColumn("organization_id", "text", (c) => c.notNull())
    .addColumn("livemode", "boolean", (c) => c.notNull())
    .addColumn("accepted_by", "text", (c) => c.notNull())
    .addColumn("wording_version", "text", (c) => c.notNull())
    .addColumn("accepted_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint("attestation_pkey", ["organization_id", "livemode"])
    .execute();
}
