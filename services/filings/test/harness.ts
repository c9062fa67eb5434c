/**
 * Runs the filings service in-process on its own test database and calls it over gRPC with the kit's client,
 * as the gateway does.
 */
import { sql, type Kysely } from "kysely";
import { type ClientOf } from "@dpp/kit";
import { createDb } from "@dpp/kit/internal";
import { startServiceUnderTest, type Tenant, type UnderTest } from "@dpp/kit/testing";
import { filingsV1 } from "@dpp/proto";
import { filingsService } from "../src/service";
import { FILINGS_SCHEMA, type FilingsDB } from "../src/store/schema";

export type FilingsClient = ClientOf<typeof filingsV1.FilingsService>;

export interface Harness {
  service: UnderTest<typeof filingsService>;
  client: FilingsClient;
  /** A connection on the service's schema, to look at what a call stored. */
  sql: Kysely<FilingsDB>;
  /** The tenant's rows in each of the service's tables. */
  rowCounts(t: Tenant): Promise<Record<string, number>>;
  close(): Promise<void>;
}

export async function startHarness(label: string): Promise<Harness> {
  // No passport and no portal: these tests call what needs neither (an unreachable address, never another stack's).
  const service = await startServiceUnderTest(filingsService, { PASSPORT_ADDR: "127.0.0.1:9" }, label);
  const query = createDb<FilingsDB>({
    url: service.database.url,
    schema: FILINGS_SCHEMA,
    applicationName: "filings-test",
    max: 2,
  });
  return {
    service,
    client: service.client(filingsV1.FilingsService),
    sql: query,
    rowCounts: async (t) => {
      const counts: Record<string, number> = {};
      for (const table of ["affichage", "attestation", "idempotency", "outbox"]) {
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
