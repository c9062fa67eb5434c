/**
 * Runs the variants-units service in-process on its own test database and calls it over gRPC with the kit's client,
 * as the gateway does.
 */
import { sql, type Kysely } from "kysely";
import { type ClientOf } from "@dpp/kit";
import { createDb } from "@dpp/kit/internal";
import { startServiceUnderTest, type Tenant, type UnderTest } from "@dpp/kit/testing";
import { variantsUnitsV1 } from "@dpp/proto";
import { variantsUnitsService } from "../src/service";
import { VARIANTS_UNITS_SCHEMA, type VariantsUnitsDB } from "../src/store/schema";

export type VariantsUnitsClient = ClientOf<typeof variantsUnitsV1.VariantsUnitsService>;

export interface Harness {
  service: UnderTest<typeof variantsUnitsService>;
  client: VariantsUnitsClient;
  /** A connection on the service's schema, to look at what a call stored. */
  sql: Kysely<VariantsUnitsDB>;
  /** The tenant's rows in each of the service's tables. */
  rowCounts(t: Tenant): Promise<Record<string, number>>;
  close(): Promise<void>;
}

export async function startHarness(label: string): Promise<Harness> {
  const service = await startServiceUnderTest(variantsUnitsService, {}, label);
  const query = createDb<VariantsUnitsDB>({
    url: service.database.url,
    schema: VARIANTS_UNITS_SCHEMA,
    applicationName: "variants-units-test",
    max: 2,
  });
  return {
    service,
    client: service.client(variantsUnitsV1.VariantsUnitsService),
    sql: query,
    rowCounts: async (t) => {
      const counts: Record<string, number> = {};
      for (const table of [
        "variant",
        "unit",
        "unit_status_change",
        "unit_reading",
        "idempotency",
        "outbox",
      ]) {
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
