/**
 * Supervision of the local stack's processes (`npm start`): a service that dies is started again after a backoff
 * that doubles with each death (initialBackoffMs, 2×, 4×… up to maxBackoffMs); a service that dies more than
 * maxRestarts times within windowMs is given up on, and the stack stops with a message saying so. Each death,
 * restart and the giving up are reported. The e2e harness runs the stack without it: a test that kills a service
 * decides itself when it comes back.
 */
import type { ChildProcess } from "node:child_process";

export interface SupervisionPolicy {
  initialBackoffMs: number;
  maxBackoffMs: number;
  /** Restarts allowed within windowMs; one more death gives up. */
  maxRestarts: number;
  windowMs: number;
}

export const DEFAULT_SUPERVISION: SupervisionPolicy = {
  initialBackoffMs: 1000,
  maxBackoffMs: 30_000,
  maxRestarts: 5,
  windowMs: 5 * 60_000,
};

export type SupervisionEvent =
  | {
      kind: "died";
      service: string;
      exit: string;
      restartInMs: number;
      restart: number;
      policy: SupervisionPolicy;
    }
  | { kind: "restarted"; service: string; pid: number | undefined }
  | { kind: "gave_up"; service: string; exit: string; deaths: number; policy: SupervisionPolicy };

/** How a process ended, for the log: its exit code or its signal. */
export function exitOf(child: ChildProcess): string {
  return child.signalCode ?? `code ${child.exitCode}`;
}

/** One line of the log for an event. */
export function describeSupervisionEvent(e: SupervisionEvent): string {
  const s = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
  switch (e.kind) {
    case "died":
      return `${e.service} exited (${e.exit}); restarting it in ${s(e.restartInMs)} (restart ${e.restart} of at most ${e.policy.maxRestarts} within ${s(e.policy.windowMs)}).`;
    case "restarted":
      return `${e.service} restarted (pid ${e.pid ?? "?"}).`;
    case "gave_up":
      return `${e.service} exited (${e.exit}) for the ${e.deaths}th time within ${s(e.policy.windowMs)}; giving up and stopping the stack. Its log says why it died.`;
  }
}

export class Supervisor {
  private readonly deaths = new Map<string, number[]>();
  private readonly paused = new Set<string>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private stopped = false;

  constructor(
    private readonly policy: SupervisionPolicy,
    /** Starts the service again; resolves with its process once it is ready, rejects when it is not. */
    private readonly start: (service: string) => Promise<ChildProcess>,
    private readonly report: (event: SupervisionEvent) => void,
    private readonly now: () => number = Date.now,
  ) {}

  /** Restarts `child`'s service whenever it exits, unless paused or stopped. */
  watch(service: string, child: ChildProcess): void {
    this.paused.delete(service);
    const onExit = () => {
      if (this.stopped || this.paused.has(service)) return;
      this.died(service, exitOf(child));
    };
    if (child.exitCode !== null || child.signalCode !== null) onExit();
    else child.once("exit", onExit);
  }

  /** The service is stopped on purpose: its next exit is not a death. watch() resumes supervision. */
  pause(service: string): void {
    this.paused.add(service);
  }

  /** No more restarts (the stack is stopping). */
  stop(): void {
    this.stopped = true;
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
  }

  private died(service: string, exit: string): void {
    const now = this.now();
    const recent = (this.deaths.get(service) ?? []).filter((t) => now - t < this.policy.windowMs);
    recent.push(now);
    this.deaths.set(service, recent);
    if (recent.length > this.policy.maxRestarts) {
      this.stop();
      this.report({ kind: "gave_up", service, exit, deaths: recent.length, policy: this.policy });
      return;
    }
    const restartInMs = Math.min(
      this.policy.initialBackoffMs * 2 ** (recent.length - 1),
      this.policy.maxBackoffMs,
    );
    this.report({ kind: "died", service, exit, restartInMs, restart: recent.length, policy: this.policy });
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      if (this.stopped || this.paused.has(service)) return;
      this.start(service).then(
        (child) => {
          if (this.stopped) return;
          this.report({ kind: "restarted", service, pid: child.pid });
          this.watch(service, child);
        },
        (err: unknown) => {
          if (this.stopped || this.paused.has(service)) return;
          this.died(service, err instanceof Error ? err.message : String(err));
        },
      );
    }, restartInMs);
    this.timers.add(timer);
  }
}
