import type { Kysely, Migration } from "kysely";

/** Feed retention deletes by arrival time: an index makes the periodic delete cheap. */
export const retention: Migration = {
  async up(db: Kysely<any>) {
    await db.schema.createIndex("event_received_at_idx").on("event").column("received_at").execute();
  },
  async down(db: Kysely<any>) {
    await db.schema.dropIndex("event_received_at_idx").execute();
  },
};
