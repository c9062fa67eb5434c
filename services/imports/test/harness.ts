/**
 * Runs the imports service in-process on its own test database and calls it over gRPC with the kit's client,
 * as the gateway does.
 */
import { sql, type Kysely } from "kysely";
import { type ClientOf } from "@dpp/kit";
import { createDb } from "@dpp/kit/internal";
import { startServiceUnderTest, type Tenant, type UnderTest } from "@dpp/kit/testing";
import { importsV1 } from "@dpp/proto";
import { importsService } from "../src/service";
import { IMPORTS_SCHEMA, type ImportsDB } from "../src/store/schema";

export type ImportsClient = ClientOf<typeof importsV1.ImportsService>;

export interface Harness {
  service: UnderTest<typeof importsService>;
  client: ImportsClient;
  /** A connection on the service's schema, to look at what a call stored. */
  sql: Kysely<ImportsDB>;
  /** The tenant's rows in each of the service's tables. */
  rowCounts(t: Tenant): Promise<Record<string, number>>;
  close(): Promise<void>;
}

export async function startHarness(label: string): Promise<Harness> {
  // No worker: these tests look at the service's API; the e2e tests run the worker against passport.
  const service = await startServiceUnderTest(importsService, { IMPORTS_WORKER: "off" }, label);
  const query = createDb<ImportsDB>({
    url: service.database.url,
    schema: IMPORTS_SCHEMA,
    applicationName: "imports-test",
    max: 2,
  });
  return {
    service,
    client: service.client(importsV1.ImportsService),
    sql: query,
    rowCounts: async (t) => {
      const counts: Record<string, number> = {};
      for (const table of ["job", "job_row", "idempotency", "outbox"]) {
        const { rows } = await sql<{ n: number }>`select count(*)::int as n from ${sql.table(table)}
          where organization_id = ${t.organizationId} and livemode = ${t.livemode}`.execute(query);
        counts[table] = rows[0]!.n;
      }
      return counts;
    },
    close: async () => {
      await query.destroy();
      await service.close();
    },
  };
}
