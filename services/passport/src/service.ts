import {
  addService,
  createBus,
  createDb,
  migrateBus,
  migrateSchema,
  OutboxRelay,
  startGrpcServer,
  type Logger,
} from "@dpp/kit";
import { passportV1 } from "@dpp/proto";
import { migrations } from "../migrations";
import type { PassportConfig } from "./config";
import type { PassportDB } from "./store/schema";
import { PassportRepository } from "./store/passports.repository";
import { passportRpc } from "./rpc/passport.rpc";

export const PASSPORT_SCHEMA = "passport";

export interface PassportServiceHandle {
  port: number;
  relay: OutboxRelay;
  stop(): Promise<void>;
}

/** The composition root: config → db → bus → relay → rpc → gRPC server. */
export async function startPassportService(
  config: PassportConfig,
  log: Logger,
): Promise<PassportServiceHandle> {
  const db = createDb<PassportDB>({
    url: config.DATABASE_URL,
    schema: PASSPORT_SCHEMA,
    applicationName: "passport",
    max: config.DB_POOL_MAX,
    log,
  });
  const bus = createBus(config, log);
  const relay = new OutboxRelay(db, bus, log, {
    schema: PASSPORT_SCHEMA,
    intervalMs: config.RELAY_INTERVAL_MS,
  });
  relay.start();
  const repo = new PassportRepository(db);
  const grpc = await startGrpcServer(config.GRPC_ADDR, log, (server) => {
    addService(
      server,
      passportV1.PassportService,
      passportRpc(repo, () => relay.wake()),
      log,
    );
    return [passportV1.PassportService.typeName];
  });
  return {
    port: grpc.port,
    relay,
    stop: async () => {
      await grpc.shutdown(config.SHUTDOWN_GRACE_MS);
      await relay.stop();
      await bus.close();
      await db.destroy();
    },
  };
}

export async function migratePassport(config: Pick<PassportConfig, "DATABASE_URL" | "BUS_DATABASE_URL">) {
  const db = createDb<PassportDB>({
    url: config.DATABASE_URL,
    schema: PASSPORT_SCHEMA,
    applicationName: "passport-migrate",
    max: 1,
  });
  try {
    await migrateSchema(db, PASSPORT_SCHEMA, migrations);
  } finally {
    await db.destroy();
  }
  await migrateBus(config.BUS_DATABASE_URL ?? config.DATABASE_URL);
}
