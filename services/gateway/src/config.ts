import { z } from "zod";
import { address, logLevel, positiveInt, postgresUrl, loadConfig } from "@dpp/kit";

export const gatewayEnv = z.object({
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
});

export type GatewayConfig = z.infer<typeof gatewayEnv>;

export const loadGatewayConfig = (env: Record<string, string | undefined> = process.env) =>
  loadConfig(gatewayEnv, env);
