/**
 * The Kafka variables and their validation. Kept apart from kafka-bus.ts so
 * that reading the configuration does not load kafkajs.
 */
import { z } from "zod";
import { ConfigError, positiveInt } from "./config";

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

/**
 * The Kafka variables, spread into a service's config schema. KAFKA_BROKERS
 * unset (or empty) keeps the Postgres-table transport.
 */
export const kafkaEnv = {
  KAFKA_BROKERS: z.preprocess((v) => (v === "" ? undefined : v), brokerList.optional()),
  KAFKA_CLIENT_ID: z.string().min(1).optional(),
  KAFKA_TOPIC_PARTITIONS: positiveInt(6),
  KAFKA_TOPIC_REPLICATION_FACTOR: z.coerce.number().int().positive().optional(),
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
