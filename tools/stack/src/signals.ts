/**
 * The stack's stop signals: SIGINT (Ctrl-C), SIGTERM (a process manager, npm passing it on) and SIGHUP (the
 * terminal closed) each run the stack's shutdown, which stops the services (drained), then the portal simulator,
 * then the embedded Postgres, in that order. The embedded Postgres library's own handlers of these signals are
 * taken off as it loads (loadEmbeddedPostgres), so this shutdown runs to its end.
 */
export const STOP_SIGNALS = ["SIGINT", "SIGTERM", "SIGHUP"] as const;

export function onStopSignal(stop: (signal: (typeof STOP_SIGNALS)[number]) => void): void {
  for (const signal of STOP_SIGNALS) process.on(signal, () => stop(signal));
}
