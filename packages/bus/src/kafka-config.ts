/**
 * The Kafka variables and their validation. Kept apart from kafka-bus.ts so
 * that reading the configuration does not load kafkajs.
 */
import { z } from "zod";
import { ConfigError, DOMAIN_EVENTS_TOPIC, positiveInt } from "@dpp/kit/base";

const brokerList = z
  .string()
  .transform((s) =>
    s
      .split(",")
      .map((b) => b.trim())
      .filter(Boolean),
  )
  .refine((l) => l.length > 0 && l.every((b) => /^[^\s:,]+:\d{1,5}$/.test(b)), {
    message: "expected a comma-separated list of host:port",
  });

const bool = z.enum(["true", "false"]).transform((v) => v === "true");

/** A Kafka topic or consumer-group name: what the broker accepts (letters, digits, ".", "_", "-"). */
const kafkaName = z
  .string()
  .regex(/^[A-Za-z0-9._-]{1,249}$/, "expected 1 to 249 letters, digits, '.', '_' or '-'");

/** Default consumer group of the events service's feed consumer. */
export const DEFAULT_FEED_CONSUMER_GROUP = "events";

/**
 * The Kafka variables, spread into a service's config schema. KAFKA_BROKERS
 * unset (or empty) keeps the Postgres-table transport.
 *
 * Names: KAFKA_TOPIC and KAFKA_CONSUMER_GROUP default to the names of one
 * deployment; two deployments sharing a cluster must set distinct ones (else
 * their consumers split one topic's partitions between two databases and each
 * feed silently misses the other's share). The Postgres-table bus uses the same
 * names inside its own database.
 *
 * Timeouts of the consumer group (see docs/decisions/0016-kafka-in-production.md):
 * a replica that dies without leaving (SIGKILL, node loss) keeps its partitions
 * until KAFKA_SESSION_TIMEOUT_MS passes; a rebalance waits at most
 * KAFKA_REBALANCE_TIMEOUT_MS for every member to rejoin. The defaults suit
 * Kubernetes: a killed pod's partitions move within 10 s, and a rebalance fits
 * in the pods' 30 s termination grace period.
 */
export const kafkaEnv = {
  KAFKA_BROKERS: z.preprocess((v) => (v === "" ? undefined : v), brokerList.optional()),
  KAFKA_CLIENT_ID: z.string().min(1).optional(),
  /** The topic domain events travel on. */
  KAFKA_TOPIC: kafkaName.default(DOMAIN_EVENTS_TOPIC),
  /** The events service's consumer group. */
  KAFKA_CONSUMER_GROUP: kafkaName.default(DEFAULT_FEED_CONSUMER_GROUP),
  KAFKA_TOPIC_PARTITIONS: positiveInt(6),
  /** Replication factor of a topic the service creates; unset: the broker's default.replication.factor, read from the broker. */
  KAFKA_TOPIC_REPLICATION_FACTOR: z.coerce.number().int().positive().optional(),
  /** false: never create the topic; a missing topic is reported (and checked again) until someone creates it. */
  KAFKA_TOPIC_CREATE: bool.default(true),
  /** A consumer that stops heartbeating (killed, partitioned) loses its partitions after this long. */
  KAFKA_SESSION_TIMEOUT_MS: z.coerce.number().int().min(6_000).max(300_000).default(10_000),
  /** How long a rebalance waits for every member to rejoin (at least the session timeout). */
  KAFKA_REBALANCE_TIMEOUT_MS: z.coerce.number().int().min(6_000).max(300_000).default(30_000),
  KAFKA_SSL: bool.default(false),
  /** PEM text of the CA bundle, or a path to a PEM file. Implies TLS. */
  KAFKA_SSL_CA: z.string().min(1).optional(),
  KAFKA_SASL_MECHANISM: z.preprocess(
    (v) => (v === "" ? undefined : v),
    z.enum(["plain", "scram-sha-256", "scram-sha-512"]).optional(),
  ),
  KAFKA_SASL_USERNAME: z.string().min(1).optional(),
  KAFKA_SASL_PASSWORD: z.string().min(1).optional(),
};

export const kafkaEnvSchema = z.object(kafkaEnv);
export type KafkaEnv = z.infer<typeof kafkaEnvSchema>;

/** Cross-field rules of the Kafka variables; add to a schema with `.superRefine`. */
export function refineKafkaEnv(v: Partial<KafkaEnv>, ctx: z.RefinementCtx): void {
  if (
    v.KAFKA_SESSION_TIMEOUT_MS &&
    v.KAFKA_REBALANCE_TIMEOUT_MS &&
    v.KAFKA_REBALANCE_TIMEOUT_MS < v.KAFKA_SESSION_TIMEOUT_MS
  )
    ctx.addIssue({
      code: "custom",
      path: ["KAFKA_REBALANCE_TIMEOUT_MS"],
      message: "must be at least KAFKA_SESSION_TIMEOUT_MS",
    });
  if (v.KAFKA_SASL_MECHANISM) {
    for (const k of ["KAFKA_SASL_USERNAME", "KAFKA_SASL_PASSWORD"] as const)
      if (!v[k])
        ctx.addIssue({ code: "custom", path: [k], message: `required when KAFKA_SASL_MECHANISM is set` });
  }
}

/** Reads and validates the Kafka variables alone (for processes whose schema does not include them). */
export function loadKafkaEnv(env: Record<string, string | undefined> = process.env): KafkaEnv {
  const parsed = kafkaEnvSchema.superRefine(refineKafkaEnv).safeParse(env);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join(".")}: ${i.message}`);
    throw new ConfigError(`Invalid configuration:\n${lines.join("\n")}`);
  }
  return parsed.data;
}
