import { z } from "zod";

/**
 * Reads the environment once, validates it against a zod schema and freezes it.
 * A missing or malformed variable stops the process at start with a message that
 * names every offending variable (fail fast), never at the first request.
 */
export function loadConfig<S extends z.ZodType>(
  schema: S,
  env: Record<string, string | undefined> = process.env,
): Readonly<z.infer<S>> {
  const parsed = schema.safeParse(env);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join(".") || "(env)"}: ${i.message}`);
    throw new ConfigError(`Invalid configuration:\n${lines.join("\n")}`);
  }
  return Object.freeze(parsed.data) as Readonly<z.infer<S>>;
}

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ConfigError";
  }
}

const PORT = String.raw`\d{1,5}`;
const HOST_PORT = String.raw`[^\s:/,\[\]]+:${PORT}`;
const IPV4_PORT = String.raw`\d{1,3}(?:\.\d{1,3}){3}:${PORT}`;
const IPV6_PORT = String.raw`\[[0-9A-Fa-f:.]+\]:${PORT}`;
const GRPC_TARGET = new RegExp(
  [
    `^${HOST_PORT}$`,
    `^dns:(?://[^\\s/]*/)?${HOST_PORT}$`,
    `^ipv4:${IPV4_PORT}(?:,${IPV4_PORT})*$`,
    `^ipv6:${IPV6_PORT}(?:,${IPV6_PORT})*$`,
  ].join("|"),
);

/**
 * Where callers reach a gRPC service (<SERVICE>_ADDR): `host:port` (resolved through DNS, every address of the
 * name, and resolved again as pods come and go: docs/decisions/0061), `dns:///host:port` (the same, written as a
 * gRPC target), or a fixed list `ipv4:127.0.0.1:50051,127.0.0.1:50061` (`ipv6:[::1]:50051,...`), e.g. several
 * replicas on one machine. Calls are spread round-robin over every address (grpc.ts, clientChannelOptions).
 */
export const address = z
  .string()
  .regex(
    GRPC_TARGET,
    "expected host:port, dns:///host:port, or ipv4:<ip>:<port>,<ip>:<port>... (a gRPC target)",
  );

/** host:port, a listen address (GRPC_ADDR): one host or interface and one port. */
export const listenAddress = z.string().regex(new RegExp(`^${HOST_PORT}$`), "expected host:port");

export const postgresUrl = z.string().regex(/^postgres(ql)?:\/\//, "expected a postgres:// connection URL");

export const logLevel = z
  .enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"])
  .default("info");

export const positiveInt = (def: number) => z.coerce.number().int().positive().default(def);
