import type { Server } from "node:http";
import { sql } from "kysely";
import {
  createBus,
  createClient,
  createDb,
  migrateBus,
  migrateDatabase,
  OutboxRelay,
  type ClientOptions,
  type Logger,
} from "@dpp/kit";
import { migrations } from "../migrations";
import { eventsV1, passportV1 } from "@dpp/proto";
import type { GatewayConfig } from "./config";
import type { GatewayDB } from "./store/schema";
import { IdentityRepository } from "./modules/identity/identity.repository";
import { Authenticator } from "./modules/identity/authenticator";
import { createApp } from "./http/app";
import { gatewayModules } from "./modules";
import { routeTable } from "./routes";
import { KeyCache, listenForKeyChanges } from "./modules/identity/key-cache";
import { RateLimiter } from "./ratelimit/limiter";
import { IdempotencyStore, startReaper } from "./idempotency/idempotency";

export const GATEWAY_SCHEMA = "gateway";

export interface GatewayHandle {
  port: number;
  server: Server;
  stop(): Promise<void>;
}

/** The composition root of the gateway: config → db → clients → app → HTTP server. */
export async function startGateway(config: GatewayConfig, log: Logger): Promise<GatewayHandle> {
  const db = createDb<GatewayDB>({
    url: config.DATABASE_URL,
    schema: GATEWAY_SCHEMA,
    applicationName: "gateway",
    max: config.DB_POOL_MAX,
    log,
  });
  // grant.* events: the gateway's own outbox, relayed to the bus like every service's.
  const bus = createBus(config, log, { serviceName: "gateway" });
  const relay = new OutboxRelay(db, bus, log, {
    schema: GATEWAY_SCHEMA,
    intervalMs: config.RELAY_INTERVAL_MS,
  });
  relay.start();
  const identity = new IdentityRepository(db, () => relay.wake());
  const clients = connectClients(config);
  const keyCache = new KeyCache(config.KEY_CACHE_TTL_MS);
  const keyListener =
    config.KEY_CACHE_TTL_MS > 0
      ? listenForKeyChanges(config.DATABASE_URL, GATEWAY_SCHEMA, keyCache, log)
      : undefined;
  const rateLimiter = new RateLimiter({
    redisUrl: config.REDIS_URL,
    keyPrefix: config.RATE_LIMIT_KEY_PREFIX,
    perKeyPerMinute: config.RATE_LIMIT_PER_KEY_PER_MINUTE,
    anonymousPerMinute: config.RATE_LIMIT_ANONYMOUS_PER_MINUTE,
    log,
  });
  // An in-flight claim outlives the longest call it guards (the deadline) by a margin.
  const idempotency = new IdempotencyStore(db, config.GRPC_DEADLINE_MS + 30_000);
  const reaper = startReaper(idempotency, config.IDEMPOTENCY_REAP_INTERVAL_MS, log);
  const app = createApp({
    authenticator: new Authenticator(identity, undefined, keyCache),
    rateLimiter,
    idempotency,
    routes: routeTable(gatewayModules({ identity, ...clients })),
    log,
    docsBaseUrl: config.DOCS_BASE_URL,
    trustProxy: config.TRUST_PROXY,
    ready: async () => {
      await sql`select 1`.execute(db);
    },
  });
  const server = await new Promise<Server>((resolve, reject) => {
    const s = app.listen(config.HTTP_PORT, config.HTTP_HOST, (err?: Error) =>
      err ? reject(err) : resolve(s),
    );
  });
  server.keepAliveTimeout = 65_000;
  const addr = server.address();
  const port = typeof addr === "object" && addr ? addr.port : config.HTTP_PORT;
  log.info({ host: config.HTTP_HOST, port }, "gateway listening");
  return {
    port,
    server,
    stop: async () => {
      await new Promise<void>((resolve) => {
        const t = setTimeout(() => {
          server.closeAllConnections();
          resolve();
        }, config.SHUTDOWN_GRACE_MS);
        t.unref();
        server.close(() => {
          clearTimeout(t);
          resolve();
        });
        server.closeIdleConnections();
      });
      reaper.stop();
      await relay.stop();
      await bus.close();
      await keyListener?.stop();
      await rateLimiter.close();
      for (const client of Object.values(clients)) client.close();
      await db.destroy();
    },
  };
}

/** Every gRPC client of the gateway, made here with the same call options. */
function connectClients(config: GatewayConfig) {
  const options = (target: string): ClientOptions => ({ deadlineMs: config.GRPC_DEADLINE_MS, target });
  return {
    passport: createClient(passportV1.PassportService, config.PASSPORT_ADDR, options("passport")),
    events: createClient(eventsV1.EventsService, config.EVENTS_ADDR, options("events")),
  };
}

export async function migrateGateway(url: string, busUrl: string = url): Promise<void> {
  await migrateDatabase(url, GATEWAY_SCHEMA, migrations);
  await migrateBus(busUrl);
}
