/**
 * Runs the variants-units service in-process on its own test database, beside the passport service it reads
 * passports from and claims GTINs at (on another test database, trusting variants-units' key as passport does in
 * the stack), and calls it over gRPC with the kit's client, as the gateway does.
 */
import { sql, type Kysely } from "kysely";
import { type ClientOf } from "@dpp/kit";
import { createClient, createContextSigner, createDb } from "@dpp/kit/internal";
import {
  formatTrustedKeys,
  generateInternalKeyPair,
  startServiceUnderTest,
  tenantContext,
  type Tenant,
  type UnderTest,
} from "@dpp/kit/testing";
import { passportV1, variantsUnitsV1 } from "@dpp/proto";
// The passports it reads are the real passport service's, run beside it in the test (never imported by src/).
// eslint-disable-next-line no-restricted-imports
import { passportService } from "@dpp/passport";
import { variantsUnitsService } from "../src/service";
import { VARIANTS_UNITS_SCHEMA, type VariantsUnitsDB } from "../src/store/schema";

export type VariantsUnitsClient = ClientOf<typeof variantsUnitsV1.VariantsUnitsService>;

export interface Harness {
  service: UnderTest<typeof variantsUnitsService>;
  client: VariantsUnitsClient;
  /** A draft passport of the tenant at the passport service; answers its id. */
  createPassport(t: Tenant, category: string): Promise<string>;
  /** A connection on the service's schema, to look at what a call stored. */
  sql: Kysely<VariantsUnitsDB>;
  /** The tenant's rows in each of the service's tables. */
  rowCounts(t: Tenant): Promise<Record<string, number>>;
  /** The passport service's client, its calls signed as variants-units' (the service's own client is internal). */
  passport: ClientOf<typeof passportV1.PassportService>;
  /** A connection on the passport service's database (its GTIN claims). */
  passportSql: Kysely<any>;
  close(): Promise<void>;
}

export async function startHarness(label: string, env: Record<string, string> = {}): Promise<Harness> {
  const keys = generateInternalKeyPair();
  const passport = await startServiceUnderTest(
    passportService(),
    { INTERNAL_AUTH_TRUSTED_KEYS: formatTrustedKeys({ "variants-units": [keys.publicKey] }) },
    `${label}_passport`,
  );
  const service = await startServiceUnderTest(
    variantsUnitsService,
    { PASSPORT_ADDR: passport.address, INTERNAL_AUTH_PRIVATE_KEY: keys.privateKey, ...env },
    label,
  ).catch(async (err: unknown) => {
    await passport.close();
    throw err;
  });
  // The test's own calls to passport are signed as variants-units', the one caller that passport trusts here.
  const passportClient = createClient(passportV1.PassportService, passport.address, {
    signer: createContextSigner({ issuer: "variants-units", privateKey: keys.privateKey }),
    audience: "passport",
  });
  const passportQuery = createDb<any>({
    url: passport.database.url,
    schema: "passport",
    applicationName: "variants-units-test-passport",
    max: 1,
  });
  const query = createDb<VariantsUnitsDB>({
    url: service.database.url,
    schema: VARIANTS_UNITS_SCHEMA,
    applicationName: "variants-units-test",
    max: 2,
  });
  return {
    service,
    client: service.client(variantsUnitsV1.VariantsUnitsService),
    createPassport: async (t, category) => {
      const res = await passportClient.createPassport(
        { category, dataJson: "{}" },
        { context: tenantContext(t) },
      );
      return res.passport!.id;
    },
    sql: query,
    passport: passportClient,
    passportSql: passportQuery,
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
      passportClient.close();
      await query.destroy();
      await passportQuery.destroy();
      await service.close();
      await passport.close();
    },
  };
}
