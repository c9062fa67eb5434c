import type { Kysely } from "kysely";
import { createIdempotencyTable } from "@dpp/kit";

/** Idempotency records kept with the writes they answer (docs/decisions/0018-idempotency-with-the-write.md). */
export async function up(db: Kysely<any>): Promise<void> {
  await createIdempotencyTable(db);
}
