import type { Kysely, Migration } from "kysely";
import { sql } from "kysely";

/** The feed: one row per accepted event, numbered per (organization, mode). */
export const init: Migration = {
  async up(db: Kysely<any>) {
    await db.schema
      .createTable("event")
      .addColumn("organization_id", "text", (c) => c.notNull())
      .addColumn("livemode", "boolean", (c) => c.notNull())
      .addColumn("sequence", "bigint", (c) => c.notNull())
      .addColumn("event_id", "text", (c) => c.notNull())
      .addColumn("type", "text", (c) => c.notNull())
      .addColumn("created_at", "timestamptz", (c) => c.notNull())
      .addColumn("related", "jsonb", (c) => c.notNull())
      .addColumn("received_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
      .addPrimaryKeyConstraint("event_pk", ["organization_id", "livemode", "sequence"])
      .addUniqueConstraint("event_event_id_key", ["event_id"])
      .execute();
    await db.schema
      .createIndex("event_type_idx")
      .on("event")
      .columns(["organization_id", "livemode", "type", "sequence"])
      .execute();
    await db.schema
      .createTable("feed_counter")
      .addColumn("organization_id", "text", (c) => c.notNull())
      .addColumn("livemode", "boolean", (c) => c.notNull())
      .addColumn("last_sequence", "bigint", (c) => c.notNull())
      .addPrimaryKeyConstraint("feed_counter_pk", ["organization_id", "livemode"])
      .execute();
  },
  async down(db: Kysely<any>) {
    await db.schema.dropTable("feed_counter").execute();
    await db.schema.dropTable("event").execute();
  },
};
