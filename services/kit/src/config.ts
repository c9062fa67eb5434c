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

/**
 * host:port, as used for <SERVICE>_ADDR and listen addresses; a caller's <SERVICE>_ADDR may also name every
 * replica of the service, `ipv4:127.0.0.1:50051,127.0.0.1:50061` (gRPC's own syntax for a list of addresses).
 */
export const address = z
  .string()
  .regex(
    /^(?:[^\s:,]+:\d{1,5}|ipv4:\d{1,3}(?:\.\d{1,3}){3}:\d{1,5}(?:,\d{1,3}(?:\.\d{1,3}){3}:\d{1,5})*)$/,
    "expected host:port",
  );

export const postgresUrl = z.string().regex(/^postgres(ql)?:\/\//, "expected a postgres:// connection URL");

export const logLevel = z
  .enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"])
  .default("info");

export const positiveInt = (def: number) => z.coerce.number().int().positive().default(def);
