import {
  addService,
  createBus,
  createDb,
  migrateBus,
  migrateDatabase,
  OutboxRelay,
  startGrpcServer,
  type Logger,
} from "@dpp/kit";
import { passportV1 } from "@dpp/proto";
import { migrations } from "../migrations";
import type { PassportConfig } from "./config";
import type { PassportDB } from "./store/schema";
import { PassportStore } from "./store";
import { passportUseCases } from "./app";
import { passportRpc } from "./rpc/passport.rpc";
import { RetentionJob } from "./retention";
import { defaultPrePublishChecks, type PrePublishCheck } from "./domain/prepublish";

export const PASSPORT_SCHEMA = "passport";

export interface PassportServiceHandle {
  port: number;
  relay: OutboxRelay;
  retention: RetentionJob;
  stop(): Promise<void>;
}

/** The composition root: config → db → bus → relay → rpc → gRPC server. */
export interface PassportServiceOptions {
  /** Pre-publish checks owned by other services; defaults to "nothing to check" for each. */
  prePublishChecks?: PrePublishCheck;
}

export async function startPassportService(
  config: PassportConfig,
  log: Logger,
  options: PassportServiceOptions = {},
): Promise<PassportServiceHandle> {
  const db = createDb<PassportDB>({
    url: config.DATABASE_URL,
    schema: PASSPORT_SCHEMA,
    applicationName: "passport",
    max: config.DB_POOL_MAX,
    log,
  });
  // Kafka when KAFKA_BROKERS is set, else the Postgres-table bus.
  const bus = createBus(config, log, { serviceName: "passport" });
  const relay = new OutboxRelay(db, bus, log, {
    schema: PASSPORT_SCHEMA,
    intervalMs: config.RELAY_INTERVAL_MS,
  });
  relay.start();
  const useCases = passportUseCases({
    store: new PassportStore(db),
    hosts: { publicBaseUrl: config.PUBLIC_BASE_URL, resolverBaseUrl: config.RESOLVER_BASE_URL },
    reviewBaseUrl: config.REVIEW_BASE_URL,
    docsBaseUrl: config.DOCS_BASE_URL,
    checks: options.prePublishChecks ?? defaultPrePublishChecks(),
    onCommitted: () => relay.wake(),
  });
  const retention = new RetentionJob(db, log, {
    intervalMs: config.RETENTION_INTERVAL_MS,
    onCommitted: () => relay.wake(),
  });
  retention.start();
  const grpc = await startGrpcServer(config.GRPC_ADDR, log, (server) => {
    addService(server, passportV1.PassportService, passportRpc(useCases), log);
    return [passportV1.PassportService.typeName];
  });
  return {
    port: grpc.port,
    relay,
    retention,
    stop: async () => {
      await grpc.shutdown(config.SHUTDOWN_GRACE_MS);
      await retention.stop();
      await relay.stop();
      await bus.close();
      await db.destroy();
    },
  };
}

export async function migratePassport(config: Pick<PassportConfig, "DATABASE_URL" | "BUS_DATABASE_URL">) {
  await migrateDatabase(config.DATABASE_URL, PASSPORT_SCHEMA, migrations);
  await migrateBus(config.BUS_DATABASE_URL ?? config.DATABASE_URL);
}
