import type { Kysely } from "kysely";

/**
 * Idempotency records now live with the writes they answer, in the owning service's schema
 * (docs/decisions/0018-idempotency-with-the-write.md); the gateway's table goes. Keys recorded by the
 * gateway before this change are not replayed by the services (records lived 24 h).
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable("idempotency_record").ifExists().execute();
}
