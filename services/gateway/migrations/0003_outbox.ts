import type { Kysely } from "kysely";
import { createOutboxTable } from "@dpp/kit";

/** The gateway's outbox: grant.* events are recorded with the grant change that causes them. */
export async function up(db: Kysely<any>): Promise<void> {
  await createOutboxTable(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable("outbox").execute();
}
