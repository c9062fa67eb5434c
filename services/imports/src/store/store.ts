/**
 * Every query of the imports service. Each filters organization_id and livemode; each write goes through
 * the kit's singleStatement or transaction with the call's context, so that a keyed call's write commits with
 * its idempotency record.
 */
import type { Kysely, Selectable } from "kysely";
import { newId } from "@dpp/contract";
import { singleStatement, type TenantContext } from "@dpp/kit";
import type { ImportTable, ImportsDB } from "./schema";

export type ImportRow = Selectable<ImportTable>;

export class ImportsStore {
  constructor(readonly db: Kysely<ImportsDB>) {}

  create(t: TenantContext, label: string): Promise<ImportRow> {
    return singleStatement(this.db, t, (q) =>
      q
        .insertInto("import")
        .values({ id: newId("impo"), organization_id: t.organizationId, livemode: t.livemode, label })
        .returningAll()
        .executeTakeFirstOrThrow(),
    );
  }

  /** Newest first: `fetch` rows after the id `afterId` (the kit's page() reads limit + 1). */
  list(t: TenantContext, fetch: number, afterId: string | undefined): Promise<ImportRow[]> {
    let q = this.db
      .selectFrom("import")
      .selectAll()
      .where("organization_id", "=", t.organizationId)
      .where("livemode", "=", t.livemode);
    if (afterId !== undefined) q = q.where("id", "<", afterId);
    return q.orderBy("id", "desc").limit(fetch).execute();
  }
}
