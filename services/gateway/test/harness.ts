/** The gateway's own store on a test database: organizations, keys, links and grants. */
import type { Kysely } from "kysely";
import { ApiError } from "@dpp/contract";
import { startServiceUnderTest, type TestDatabase, type UnderTest } from "@dpp/kit/testing";
import { Admin } from "../src/modules/identity/admin";
import { gatewayService } from "../src/gateway";
import { IdentityRepository } from "../src/modules/identity/identity.repository";
import type { GatewayDB } from "../src/store/schema";

export interface Store {
  db: TestDatabase;
  /** The gateway, started as in production on its own test database (no service behind it). */
  gateway: UnderTest<typeof gatewayService>;
  sql: Kysely<GatewayDB>;
  identity: IdentityRepository;
  admin: Admin;
  close(): Promise<void>;
}

/** The gateway on a fresh database; its store is what these tests drive. */
export async function startStore(label: string): Promise<Store> {
  const gateway = await startServiceUnderTest(
    gatewayService,
    { HTTP_HOST: "127.0.0.1", HTTP_PORT: "0" },
    label,
  );
  const identity = new IdentityRepository(gateway.db);
  return {
    db: gateway.database,
    gateway,
    sql: gateway.db,
    identity,
    admin: new Admin(identity),
    close: () => gateway.close(),
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
