import { z } from "zod";
import {
  address,
  kafkaEnv,
  loadConfig,
  positiveInt,
  postgresUrl,
  refineKafkaEnv,
  serviceEnv,
} from "@dpp/kit";

export const eventsConfigSchema = z
  .object({
    DATABASE_URL: serviceEnv.DATABASE_URL,
    LOG_LEVEL: serviceEnv.LOG_LEVEL,
    DB_POOL_MAX: serviceEnv.DB_POOL_MAX,
    SHUTDOWN_GRACE_MS: serviceEnv.SHUTDOWN_GRACE_MS,
    GRPC_ADDR: address.default("0.0.0.0:50052"),
    /** Database of the Postgres-table bus; defaults to DATABASE_URL. */
    BUS_DATABASE_URL: postgresUrl.optional(),
    /** Feed events are deleted this many days after they entered the feed; 0 keeps them forever. */
    FEED_RETENTION_DAYS: z.coerce.number().int().min(0).default(90),
    /** How often the retention job runs. */
    FEED_RETENTION_INTERVAL_MS: positiveInt(3_600_000),
    /** Kafka (KAFKA_BROKERS set) instead of the Postgres-table bus. */
    ...kafkaEnv,
  })
  .superRefine(refineKafkaEnv);

export type EventsConfig = z.infer<typeof eventsConfigSchema>;

export function loadEventsConfig(
  env: Record<string, string | undefined> = process.env,
): Readonly<EventsConfig> {
  return loadConfig(eventsConfigSchema, env);
}
