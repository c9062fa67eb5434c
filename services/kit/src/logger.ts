import pino, { type Logger } from "pino";

export type { Logger };

/**
 * JSON logs on stdout. Authorization headers and anything that looks like a key
 * are redacted; keys are never logged by design, redaction is the safety net.
 */
export function createLogger(service: string, level: string = process.env.LOG_LEVEL ?? "info"): Logger {
  return pino({
    level,
    base: { service },
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: {
      paths: ["req.headers.authorization", "req.headers.cookie", "authorization", "key", "secret"],
      censor: "[redacted]",
    },
  });
}
