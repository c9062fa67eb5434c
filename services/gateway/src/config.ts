import { z } from "zod";
import { address, kafkaEnv, logLevel, positiveInt, postgresUrl, loadConfig, refineKafkaEnv } from "@dpp/kit";

export const gatewayEnv = z
  .object({
    DATABASE_URL: postgresUrl,
    LOG_LEVEL: logLevel,
    HTTP_HOST: z.string().default("0.0.0.0"),
    HTTP_PORT: z.coerce.number().int().min(0).max(65535).default(8080),
    PASSPORT_ADDR: address.default("127.0.0.1:50051"),
    EVENTS_ADDR: address.default("127.0.0.1:50052"),
    /** Deadline of every call to a service. */
    GRPC_DEADLINE_MS: positiveInt(5000),
    /** Express "trust proxy": hops in front of the gateway (0 when clients connect directly). */
    TRUST_PROXY: z.coerce.number().int().min(0).default(0),
    /** Base of documentation_url in error envelopes. */
    DOCS_BASE_URL: z.string().url().default("https://docs.dpp.example/errors"),
    DB_POOL_MAX: positiveInt(10),
    SHUTDOWN_GRACE_MS: positiveInt(10000),
    /** Redis for rate limits shared by every replica; unset: in-process limits. */
    REDIS_URL: z
      .string()
      .regex(/^rediss?:\/\//, "expected a redis:// or rediss:// URL")
      .optional()
      .or(z.literal("").transform(() => undefined)),
    /** Prefix of the rate limit keys in Redis. */
    RATE_LIMIT_KEY_PREFIX: z.string().min(1).default("dpp:rl"),
    /** Requests per minute per API key (every organization and mode it reaches). */
    RATE_LIMIT_PER_KEY_PER_MINUTE: positiveInt(600),
    /** Requests per minute per client address without a key (category endpoints). */
    RATE_LIMIT_ANONYMOUS_PER_MINUTE: positiveInt(60),
    /** Lifetime of a cached key record; the bound on revocation when a change notification is lost (max 5000). */
    KEY_CACHE_TTL_MS: z.coerce.number().int().min(0).max(5000).default(5000),
    /** How often expired idempotency records (older than 24 h) are reaped. */
    IDEMPOTENCY_REAP_INTERVAL_MS: positiveInt(600_000),
    /** Database of the Postgres-table bus (grant.* events); defaults to DATABASE_URL. */
    BUS_DATABASE_URL: postgresUrl.optional(),
    /** Outbox relay poll interval (it is also woken after each commit that wrote events). */
    RELAY_INTERVAL_MS: positiveInt(500),
    /** Kafka (KAFKA_BROKERS set) instead of the Postgres-table bus. */
    ...kafkaEnv,
  })
  .superRefine(refineKafkaEnv);

export type GatewayConfig = z.infer<typeof gatewayEnv>;

export const loadGatewayConfig = (env: Record<string, string | undefined> = process.env) =>
  loadConfig(gatewayEnv, env);
