import { z } from "zod";
import { address, loadConfig, postgresUrl, serviceEnv } from "@dpp/kit";

export const eventsConfigSchema = z.object({
  DATABASE_URL: serviceEnv.DATABASE_URL,
  LOG_LEVEL: serviceEnv.LOG_LEVEL,
  DB_POOL_MAX: serviceEnv.DB_POOL_MAX,
  SHUTDOWN_GRACE_MS: serviceEnv.SHUTDOWN_GRACE_MS,
  GRPC_ADDR: address.default("0.0.0.0:50052"),
  /** Database of the Postgres-table bus; defaults to DATABASE_URL. */
  BUS_DATABASE_URL: postgresUrl.optional(),
});

export type EventsConfig = z.infer<typeof eventsConfigSchema>;

export function loadEventsConfig(
  env: Record<string, string | undefined> = process.env,
): Readonly<EventsConfig> {
  return loadConfig(eventsConfigSchema, env);
}
