/**
 * Supervision of the local stack's services (`npm start`), processes or threads alike: a service that dies is started again after a backoff
 * that doubles with each death (initialBackoffMs, 2×, 4×… up to maxBackoffMs); a service that dies more than
 * maxRestarts times within windowMs is given up on, and the stack stops with a message saying so. Each death,
 * restart and the giving up are reported. The e2e harness runs the stack without it: a test that kills a service
 * decides itself when it comes back.
 */
/** What supervision needs of a running service (a Unit of hosting.ts). */
export interface Supervised {
  /** The process's pid (a thread: the stack's own). */
  readonly pid: number | undefined;
  /** The thread's id (a service in a thread). */
  readonly threadId?: number;
  /** How it ended ("code 1", "SIGKILL", "terminated"); undefined while it runs. */
  readonly exit: string | undefined;
  readonly exited: Promise<void>;
}

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
  | { kind: "restarted"; service: string; pid: number | undefined; threadId?: number }
  | { kind: "gave_up"; service: string; exit: string; deaths: number; policy: SupervisionPolicy };

/** One line of the log for an event. */
export function describeSupervisionEvent(e: SupervisionEvent): string {
  const s = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
  switch (e.kind) {
    case "died":
      return `${e.service} exited (${e.exit}); restarting it in ${s(e.restartInMs)} (restart ${e.restart} of at most ${e.policy.maxRestarts} within ${s(e.policy.windowMs)}).`;
    case "restarted":
      return `${e.service} restarted (${e.threadId !== undefined ? `thread ${e.threadId}` : `pid ${e.pid ?? "?"}`}).`;
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
    /** Starts the service again; resolves with its run once it is ready, rejects when it is not. */
    private readonly start: (service: string) => Promise<Supervised>,
    private readonly report: (event: SupervisionEvent) => void,
    private readonly now: () => number = Date.now,
  ) {}

  /** Restarts the service of `run` whenever it ends, unless paused or stopped. */
  watch(service: string, run: Supervised): void {
    this.paused.delete(service);
    void run.exited.then(() => {
      if (this.stopped || this.paused.has(service)) return;
      this.died(service, run.exit ?? "?");
    });
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
        (run) => {
          if (this.stopped) return;
          this.report({
            kind: "restarted",
            service,
            pid: run.pid,
            ...(run.threadId !== undefined ? { threadId: run.threadId } : {}),
          });
          this.watch(service, run);
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
