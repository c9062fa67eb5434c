/**
 * The events service's composition root: config → db → bus consumer → gRPC.
 *   node --import tsx services/events/src/main.ts migrate   (schema `events` + bus tables, then exit)
 *   node --import tsx services/events/src/main.ts serve     (the default; runs until SIGTERM)
 */
import "./tracing";
import {
  ConfigError,
  addService,
  createBus,
  createDb,
  createLogger,
  migrateBus,
  migrateDatabase,
  onShutdownSignal,
  runMain,
  startGrpcServer,
  type Logger,
} from "@dpp/kit";
import { eventsV1 } from "@dpp/proto";
import { eventsMigrations } from "../migrations";
import { loadEventsConfig, type EventsConfig } from "./config";
import { subscribeFeed } from "./consumer/feed.consumer";
import { createEventsRpc } from "./rpc/events.rpc";
import { EventsRepository } from "./store/events.repository";
import { FeedRetention } from "./store/feed-retention";
import { EVENTS_SCHEMA, type EventsDB } from "./store/schema";

export interface EventsServiceHandle {
  /** The bound gRPC port (useful with GRPC_ADDR "127.0.0.1:0"). */
  port: number;
  /** Stops the consumer, drains the gRPC server, closes the bus and the pool. Idempotent. */
  stop(): Promise<void>;
}

/** Applies the `events` schema migrations and the bus tables' migrations. */
export async function migrateEvents(
  config: Pick<EventsConfig, "DATABASE_URL" | "BUS_DATABASE_URL">,
): Promise<void> {
  await migrateDatabase(config.DATABASE_URL, EVENTS_SCHEMA, eventsMigrations);
  await migrateBus(config.BUS_DATABASE_URL ?? config.DATABASE_URL);
}

/** Runs the service in this process (used by `serve`, the local stack and the tests). */
export async function startEventsService(config: EventsConfig, log: Logger): Promise<EventsServiceHandle> {
  const db = createDb<EventsDB>({
    url: config.DATABASE_URL,
    schema: EVENTS_SCHEMA,
    applicationName: "events",
    max: config.DB_POOL_MAX,
    log,
  });
  const bus = createBus(config, log, { serviceName: "events" });
  const repo = new EventsRepository(db);
  const retention = new FeedRetention(db, repo, log.child({ component: "feed-retention" }), {
    days: config.FEED_RETENTION_DAYS,
    intervalMs: config.FEED_RETENTION_INTERVAL_MS,
  });
  let subscription: Awaited<ReturnType<typeof subscribeFeed>> | undefined;
  try {
    subscription = await subscribeFeed(bus, repo, log);
    const grpc = await startGrpcServer(config.GRPC_ADDR, log, (server) => {
      addService(server, eventsV1.EventsService, createEventsRpc(repo), log);
      return [eventsV1.EventsService.typeName];
    });
    retention.start();
    let stopping: Promise<void> | undefined;
    const sub = subscription;
    return {
      port: grpc.port,
      stop: () =>
        (stopping ??= (async () => {
          await sub.stop();
          await retention.stop();
          await grpc.shutdown(config.SHUTDOWN_GRACE_MS);
          await bus.close();
          await db.destroy();
        })()),
    };
  } catch (err) {
    await subscription?.stop().catch(() => undefined);
    await bus.close().catch(() => undefined);
    await db.destroy().catch(() => undefined);
    throw err;
  }
}

function main(): void {
  let config: Readonly<EventsConfig>;
  try {
    config = loadEventsConfig();
  } catch (err) {
    createLogger("events").fatal(err instanceof ConfigError ? err.message : String(err));
    process.exit(2);
  }
  const log = createLogger("events", config.LOG_LEVEL);
  runMain(log, {
    migrate: () => migrateEvents(config),
    serve: async () => {
      const handle = await startEventsService(config, log);
      onShutdownSignal(log, () => handle.stop());
    },
  });
}

if (require.main === module) main();
