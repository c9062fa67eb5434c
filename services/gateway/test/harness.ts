/** The gateway's own store on a test database: organizations, keys, links and grants. */
import type { Kysely } from "kysely";
import { ApiError } from "@dpp/contract";
import { createDb } from "@dpp/kit";
import { createTestDatabase, type TestDatabase } from "@dpp/kit/testing";
import { Admin } from "../src/modules/identity/admin";
import { migrateService } from "@dpp/kit";
import { GATEWAY_SCHEMA, gatewayService } from "../src/gateway";
import { IdentityRepository } from "../src/modules/identity/identity.repository";
import type { GatewayDB } from "../src/store/schema";

export interface Store {
  db: TestDatabase;
  sql: Kysely<GatewayDB>;
  identity: IdentityRepository;
  admin: Admin;
  close(): Promise<void>;
}

export async function startStore(label: string): Promise<Store> {
  const db = await createTestDatabase(label);
  await migrateService(gatewayService, { DATABASE_URL: db.url });
  const kysely = createDb<GatewayDB>({
    url: db.url,
    schema: GATEWAY_SCHEMA,
    applicationName: "gateway-test",
    max: 4,
  });
  const identity = new IdentityRepository(kysely);
  return {
    db,
    sql: kysely,
    identity,
    admin: new Admin(identity),
    close: async () => {
      await kysely.destroy();
      await db.drop();
    },
  };
}

/** Awaits a call that must fail and returns its ApiError. */
export async function refusal(call: Promise<unknown> | (() => unknown)): Promise<ApiError> {
  try {
    await (typeof call === "function" ? call() : call);
  } catch (err) {
    if (err instanceof ApiError) return err;
    throw err;
  }
  throw new Error("expected a refusal, but the call succeeded");
}
