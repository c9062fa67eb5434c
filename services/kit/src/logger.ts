import { isMainThread } from "node:worker_threads";
import pino, { type DestinationStream, type Logger } from "pino";

export type { Logger };

/**
 * JSON logs on stdout, or appended to `file` (LOG_FILE) when it is given: a service the local stack runs in a
 * worker thread has no stdout of its own, so it writes its own log file. Authorization headers and anything
 * that looks like a key are redacted; keys are never logged by design, redaction is the safety net. Where the
 * service runs as several replicas, REPLICA_ID (e.g. "passport-2", set by the local stack) names the replica in
 * every line.
 */
export function createLogger(
  service: string,
  level: string = process.env.LOG_LEVEL ?? "info",
  file: string | undefined = process.env.LOG_FILE || undefined,
): Logger {
  return pino(
    {
      level,
      base: process.env.REPLICA_ID ? { service, replica: process.env.REPLICA_ID } : { service },
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: {
        paths: ["req.headers.authorization", "req.headers.cookie", "authorization", "key", "secret"],
        censor: "[redacted]",
      },
    },
    destination(file),
  );
}

/**
 * pino's own stdout stream in the main thread. A log file, or any destination of a worker thread, is written
 * synchronously, one write per line: pino flushes a buffered stream at exit only in the main thread, and a
 * service in a thread ends with process.exit() (its last line, a fatal one, must not be lost).
 */
function destination(file: string | undefined): DestinationStream | undefined {
  if (file) return pino.destination({ dest: file, append: true, mkdir: true, sync: true });
  if (!isMainThread) return pino.destination({ fd: 1, sync: true });
  return undefined;
}
