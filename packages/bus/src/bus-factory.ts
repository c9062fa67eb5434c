import type { Kysely } from "kysely";
import { PgBus, type Bus } from "./bus";
import type { KafkaBusOptions, KafkaTestOnlySettings } from "./kafka-bus";
import { kafkaEnvSchema, type KafkaEnv } from "./kafka-config";
import type { Logger } from "@dpp/kit/base";

export interface BusConfig extends Partial<KafkaEnv> {
  /** Database holding the bus schema (the Postgres-table transport). */
  BUS_DATABASE_URL?: string;
  /** A connection idle this long in the bus's pool is closed (the Postgres-table transport). */
  DB_POOL_IDLE_MS?: number;
  /** Distinct statements the bus's pool prepares (DbOptions.preparedStatements). */
  DB_PREPARED_STATEMENTS?: number;
  DATABASE_URL: string;
}

/**
 * Chooses the bus adapter from configuration: Kafka when KAFKA_BROKERS is set
 * (the config must come from a schema that includes `kafkaEnv`), else the
 * Postgres-table transport in schema `bus` (the one-machine default). `db`, the
 * service's pool on DATABASE_URL, becomes the bus's local pool (PgBusOptions.local)
 * when the bus tables are in that database (BUS_DATABASE_URL unset or the same).
 */
export function createBus(
  config: BusConfig,
  log: Logger,
  o: {
    serviceName?: string;
    /** The service's pool on DATABASE_URL. */
    db?: Kysely<any>;
    createKafkaClient?: KafkaBusOptions["createClient"];
    /** Tests only: settings for a broker that cannot serve the production ones (see KafkaTestOnlySettings). */
    kafkaTestOnly?: KafkaTestOnlySettings;
  } = {},
): Bus {
  if (config.KAFKA_BROKERS && config.KAFKA_BROKERS.length > 0) {
    // Loaded only when chosen, so processes on the Postgres transport never load kafkajs.
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { KafkaBus, kafkaBusOptions } = require("./kafka-bus") as typeof import("./kafka-bus");
    const defaults = kafkaEnvSchema.parse({});
    const env = { ...defaults } as KafkaEnv;
    for (const [k, v] of Object.entries(config)) if (v !== undefined) (env as Record<string, unknown>)[k] = v;
    const options = kafkaBusOptions(env, log, o.serviceName);
    log.info({ brokers: options.brokers, clientId: options.clientId }, "bus: kafka");
    return new KafkaBus({ ...options, createClient: o.createKafkaClient, testOnly: o.kafkaTestOnly });
  }
  const busUrl = config.BUS_DATABASE_URL ?? config.DATABASE_URL;
  return new PgBus({
    url: busUrl,
    log,
    idleTimeoutMs: config.DB_POOL_IDLE_MS,
    preparedStatements: config.DB_PREPARED_STATEMENTS,
    local: busUrl === config.DATABASE_URL ? o.db : undefined,
  });
}
