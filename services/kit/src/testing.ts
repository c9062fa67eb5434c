/**
 * Test support: every integration test file gets its own database on the real
 * Postgres (127.0.0.1:5432, or the embedded one the jest global setup started
 * when none answers), so tests run in parallel without sharing rows.
 */
import { randomBytes } from "node:crypto";
import pg from "pg";
import type { z } from "zod";
import type { GenService, GenServiceMethods } from "@bufbuild/protobuf/codegenv2";
import { createLogger } from "./logger";
import { createClient, type PromiseClient } from "./grpc";
import {
  createContextSigner,
  formatTrustedKeys,
  generateInternalKeyPair,
  type InternalKeyPair,
} from "./internal-auth";
import { enableKeyedCallChecks } from "./keyed-work";
import {
  loadServiceConfig,
  migrateService,
  startService,
  type ServiceDefinition,
  type ServiceHandle,
} from "./service";

export { enableKeyedCallChecks } from "./keyed-work";
/** For a test that runs two services, one calling the other: the caller's key pair and the callee's trust. */
export { formatTrustedKeys, generateInternalKeyPair } from "./internal-auth";

export function adminDatabaseUrl(): string {
  return process.env.TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
}

export interface TestDatabase {
  url: string;
  name: string;
  drop(): Promise<void>;
}

function withDatabase(url: string, name: string): string {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
}

export async function createTestDatabase(label: string): Promise<TestDatabase> {
  const name = `t_${label
    .replace(/[^a-z0-9]/gi, "")
    .toLowerCase()
    .slice(0, 20)}_${randomBytes(5).toString("hex")}`;
  const admin = new pg.Client({ connectionString: adminDatabaseUrl() });
  await admin.connect();
  try {
    await admin.query(`create database ${name}`);
  } finally {
    await admin.end();
  }
  return {
    url: withDatabase(adminDatabaseUrl(), name),
    name,
    drop: async () => {
      const c = new pg.Client({ connectionString: adminDatabaseUrl() });
      await c.connect();
      try {
        await c.query(`drop database if exists ${name} with (force)`);
      } finally {
        await c.end();
      }
    },
  };
}

/** Polls `check` until it returns a value other than undefined, or fails after timeoutMs. */
export async function eventually<T>(
  check: () => Promise<T | undefined>,
  timeoutMs = 10000,
  stepMs = 50,
): Promise<T> {
  const until = Date.now() + timeoutMs;
  let lastErr: unknown;
  for (;;) {
    try {
      const v = await check();
      if (v !== undefined) return v;
    } catch (err) {
      lastErr = err;
    }
    if (Date.now() > until)
      throw new Error(`condition not met within ${timeoutMs} ms: ${String(lastErr ?? "")}`);
    await new Promise((r) => setTimeout(r, stepMs));
  }
}

export interface ServiceUnderTest<Env extends z.ZodRawShape, DB, Extra> extends ServiceHandle<
  Env,
  DB,
  Extra
> {
  /** The test database the service runs on (dropped by close). */
  database: TestDatabase;
  /** host:port of the service's gRPC server. */
  address: string;
  /** The key pair of the caller "gateway" that the service trusts in this test. */
  callerKeys: InternalKeyPair;
  /**
   * A client of the service that signs its calls as the trusted caller (closed by close()).
   * `issuer` names another caller (which the service does not trust unless `env` said so).
   */
  client<T extends GenServiceMethods>(
    service: GenService<T>,
    o?: { deadlineMs?: number; issuer?: string },
  ): PromiseClient<T> & { close(): void };
  /** Stops the service and drops its database. */
  close(): Promise<void>;
}

/** The handle type of a service definition under test, e.g. UnderTest<typeof eventsService>. */
export type UnderTest<D> =
  D extends ServiceDefinition<infer Env, infer DB, infer Extra> ? ServiceUnderTest<Env, DB, Extra> : never;

/**
 * Runs a service in this process on a fresh test database, migrated, with its
 * gRPC server on a free port of 127.0.0.1: the one way every service's
 * integration tests start it. `env` overrides or adds variables. The checks of
 * the keyed-call contract are on (docs/writes-under-a-key.md; enableKeyedCallChecks):
 * a keyed call whose work writes outside its transaction, or calls another service
 * before its key is claimed, fails.
 */
export async function startServiceUnderTest<Env extends z.ZodRawShape, DB, Extra>(
  def: ServiceDefinition<Env, DB, Extra>,
  env: Record<string, string | undefined> = {},
  label = def.name,
): Promise<ServiceUnderTest<Env, DB, Extra>> {
  enableKeyedCallChecks();
  const database = await createTestDatabase(label);
  const callerKeys = generateInternalKeyPair();
  try {
    const config = loadServiceConfig(def, {
      INTERNAL_AUTH_TRUSTED_KEYS: formatTrustedKeys({ gateway: [callerKeys.publicKey] }),
      // A service under test that calls others signs with the same test key.
      INTERNAL_AUTH_PRIVATE_KEY: callerKeys.privateKey,
      DATABASE_URL: database.url,
      GRPC_ADDR: "127.0.0.1:0",
      LOG_LEVEL: "silent",
      DB_POOL_MAX: "5",
      RELAY_INTERVAL_MS: "100",
      SHUTDOWN_GRACE_MS: "2000",
      // Metrics on a free port of 127.0.0.1 (handle.metricsPort): tests run side by side.
      METRICS_PORT: "0",
      METRICS_HOST: "127.0.0.1",
      ...env,
    });
    await migrateService(def, config);
    const handle = await startService(def, config, createLogger(`${def.name}-test`, config.LOG_LEVEL));
    const address = `127.0.0.1:${handle.port}`;
    const clients: Array<{ close(): void }> = [];
    return {
      ...handle,
      database,
      address,
      callerKeys,
      client: (service, o = {}) => {
        const signer = createContextSigner({
          issuer: o.issuer ?? "gateway",
          privateKey: callerKeys.privateKey,
        });
        const c = createClient(service, address, {
          signer,
          audience: def.name,
          deadlineMs: o.deadlineMs ?? 10_000,
        });
        clients.push(c);
        return c;
      },
      close: async () => {
        for (const c of clients) c.close();
        await handle.stop();
        await database.drop();
      },
    };
  } catch (err) {
    await database.drop().catch(() => undefined);
    throw err;
  }
}

/**
 * Calls `onStatement` with the text of every query (one message, one round trip) that a connection of the pool
 * named `applicationName` sends, and its prepared statement's name if it has one, until the returned function
 * restores node-postgres. For tests that count what a service sends to Postgres (a statement that runs as
 * `execute <name>(...)` is the text that was sent under that name).
 */
export function watchStatements(
  applicationName: string,
  onStatement: (text: string, client: pg.Client, name: string | undefined) => void,
): () => void {
  const clientQuery = pg.Client.prototype.query;
  pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
    const config = args[0] as string | { text?: string; name?: string };
    const params = (this as unknown as { connectionParameters: { application_name?: string } })
      .connectionParameters;
    if (params.application_name === applicationName)
      onStatement(
        typeof config === "string" ? config : (config.text ?? ""),
        this,
        typeof config === "string" ? undefined : config.name,
      );
    return (clientQuery as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof clientQuery;
  return () => {
    pg.Client.prototype.query = clientQuery;
  };
}

export * from "./testing-calls";
export * from "./testing-contexts";
export * from "./testing-trust-boundary";
export { registerRefusalMatchers } from "./testing-matchers";
import { registerRefusalMatchers } from "./testing-matchers";
// Tests that load the kit's test support get `expect(...).rejects.toBeRefusedWith(code)`.
registerRefusalMatchers();
