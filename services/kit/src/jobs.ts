/**
 * Periodic singleton work (the outbox relay, retention passes, idempotency
 * reaping, bus polling) runs through one runner with one set of meanings:
 *
 * - Leadership: each pass first tries a session-level Postgres advisory lock
 *   named after the job. "Lock not held" means another replica is running the
 *   same pass right now: this pass is skipped (not an error, not logged above
 *   debug) and the next tick tries again. A crashed pass's lock goes with its
 *   connection. Jobs without a database (`lock: false`) always run.
 * - First run: immediately after start (in the background), then every
 *   `intervalMs`; `wake()` asks for a pass now (coalesced with a running one),
 *   or `wakeDelayMs` later when set: wakes within that window share one pass,
 *   so a job woken by every commit (the outbox relay) carries several commits'
 *   work per pass instead of one. A wake during a pass asks for another pass
 *   after it, unless `pending` says the pass that ran already did its work.
 * - Failure: the pass is retried after an exponential backoff with jitter,
 *   capped; wakes are ignored during the backoff. The first failure is logged
 *   at once (error), repeats at most once per `repeatLogMs`, and the recovery
 *   once (info).
 * - Stop: no new pass starts; a running pass is awaited.
 * - Observation: each pass that ran is logged at debug ("job pass", with when it started and ended, and
 *   `leader`: whether it held the job's lock; a job without one runs on every replica at once), so that
 *   which replica ran which pass, and that no two ran one job's pass at once, can be read from the logs;
 *   JOB_LOG_LEVEL (e.g. "debug") sets the job lines' level apart from the service's LOG_LEVEL.
 */
import { sql, type Kysely } from "kysely";
import { lockKey } from "./db";
import type { Logger } from "./logger";

export interface LeaderJobOptions {
  /** Names the advisory lock and every log line, e.g. "passport:test-retention". */
  name: string;
  /** Time between passes. */
  intervalMs: number;
  /** One pass. It may return how much work it did (logged when > 0 and `report` is set). */
  run: () => Promise<number | void>;
  log: Logger;
  /** The database whose advisory lock elects the runner; false: no lock (every instance runs). */
  lock: Kysely<any> | false;
  /** Log line for passes that did work, e.g. "test passports past retention deleted". */
  report?: string;
  /**
   * Debounce of wake(): the pass starts this long after the first wake, carrying every wake that arrived
   * meanwhile (default 0: at once). The interval's passes are not delayed.
   */
  wakeDelayMs?: number;
  /**
   * Asked when a pass ends and wakes or ticks arrived while it ran: false drops the pass they asked for,
   * because the pass that ran already did their work (a job that can tell, e.g. the outbox relay, whose
   * last statement saw every commit that woke it before that statement was sent). Default: never dropped.
   */
  pending?: () => boolean;
  /** Delay of the first pass after start (default 0). */
  firstRunDelayMs?: number;
  /** Backoff after failures: first delay (default intervalMs, at most 1 s) and cap (default 30 s). */
  backoffMinMs?: number;
  backoffMaxMs?: number;
  /** Repeated failures are logged at most this often (default 30 s). */
  repeatLogMs?: number;
  /** Told how each pass ended and whether it held the lock (the service's metrics: ServiceMetrics.leaderJob). */
  observe?: { pass(result: "ok" | "error" | "skipped"): void; leader(held: boolean): void };
}

export type PassOutcome =
  { ran: true; work: number } | { ran: false; reason: "lock_not_held" | "stopped" | "backing_off" };

export interface LeaderJob {
  readonly name: string;
  /** Asks for a pass now (or after wakeDelayMs); coalesced with a running or scheduled pass, ignored while backing off or stopped. */
  wake(): void;
  /** Runs one pass now (under the lock) and reports what happened; failures reject. */
  runOnce(): Promise<PassOutcome>;
  /** Consecutive failed passes (0 after a successful one). */
  readonly consecutiveFailures: number;
  /** Stops the timer and waits for a running pass. */
  stop(): Promise<void>;
}

/** Delay before the next pass after `failures` consecutive failures: doubling from minMs, capped at maxMs. */
export function backoffMs(failures: number, minMs: number, maxMs: number): number {
  if (failures <= 0) return 0;
  return Math.min(maxMs, minMs * 2 ** Math.min(failures - 1, 30));
}

/** `backoffMs` with "equal jitter": between half and all of it, so replicas do not retry in step. */
export function jitteredBackoffMs(
  failures: number,
  minMs: number,
  maxMs: number,
  random = Math.random,
): number {
  const d = backoffMs(failures, minMs, maxMs);
  return Math.round(d / 2 + (d / 2) * random());
}

/** Runs `fn` while holding the session-level advisory lock `name`; undefined when another session holds it. */
export async function withLeaderLock<T>(
  db: Kysely<any>,
  name: string,
  fn: () => Promise<T>,
): Promise<T | undefined> {
  return db.connection().execute(async (conn) => {
    const key = lockKey(name);
    const { rows } = await sql<{ ok: boolean }>`select pg_try_advisory_lock(${key}) as ok`.execute(conn);
    if (!rows[0]?.ok) return undefined;
    try {
      return await fn();
    } finally {
      await sql`select pg_advisory_unlock(${key})`.execute(conn).catch(() => undefined);
    }
  });
}

export function startLeaderJob(o: LeaderJobOptions): LeaderJob {
  const log = o.log.child(
    { job: o.name },
    process.env.JOB_LOG_LEVEL ? { level: process.env.JOB_LOG_LEVEL } : undefined,
  );
  const minMs = o.backoffMinMs ?? Math.min(o.intervalMs, 1000);
  const maxMs = o.backoffMaxMs ?? 30_000;
  const repeatLogMs = o.repeatLogMs ?? 30_000;
  let stopped = false;
  let running: Promise<unknown> | undefined;
  let again = false;
  let failures = 0;
  let retryAt = 0;
  let lastFailureLog = 0;
  let debounce: NodeJS.Timeout | undefined;

  const pass = async (): Promise<PassOutcome> => {
    if (stopped) return { ran: false, reason: "stopped" };
    // When the pass held the lock (or needed none): from the moment it had it until its work ended (before the
    // unlock).
    let started = 0;
    let ended = 0;
    const run = async () => {
      started = Date.now();
      o.observe?.leader(true);
      try {
        return await o.run();
      } finally {
        ended = Date.now();
      }
    };
    const work = o.lock === false ? await run() : await withLeaderLock(o.lock, o.name, run);
    if (started === 0) o.observe?.leader(false);
    o.observe?.pass(started > 0 ? "ok" : "skipped");
    if (started > 0 && log.isLevelEnabled("debug"))
      log.debug({ started_at: started, ended_at: ended, leader: o.lock !== false }, "job pass");
    if (work === undefined && o.lock !== false) {
      log.debug("lock held by another instance; pass skipped");
      return { ran: false, reason: "lock_not_held" };
    }
    const n = typeof work === "number" ? work : 0;
    if (n > 0 && o.report) log.info({ work: n }, o.report);
    return { ran: true, work: n };
  };

  const onFailure = (err: unknown) => {
    o.observe?.pass("error");
    failures++;
    const delay = jitteredBackoffMs(failures, minMs, maxMs);
    retryAt = Date.now() + delay;
    again = false;
    const now = Date.now();
    if (failures === 1 || now - lastFailureLog >= repeatLogMs) {
      lastFailureLog = now;
      log.error({ err, failures, retryInMs: delay }, "job pass failed; retrying with backoff");
    }
    // The timer may be far away (an hourly job): retry when the backoff ends. A timer may fire a
    // millisecond before Date.now() reaches retryAt: this backoff is over when it fires (unless a
    // later failure set a new one), else the wake would be dropped and the job would wait a whole interval.
    const until = retryAt;
    setTimeout(() => {
      if (retryAt === until) retryAt = 0;
      wake();
    }, delay).unref();
  };

  const onSuccess = () => {
    if (failures > 0) log.info({ failures }, "job recovered");
    failures = 0;
    retryAt = 0;
  };

  /** A pass now (the interval, a backoff's end, a pass asked for while one ran). */
  const wake = (): void => {
    if (stopped || Date.now() < retryAt) return;
    if (running) {
      again = true;
      return;
    }
    if (debounce) {
      clearTimeout(debounce);
      debounce = undefined;
    }
    running = pass()
      .then(onSuccess, onFailure)
      .finally(() => {
        running = undefined;
        if (again) {
          again = false;
          if (o.pending?.() !== false) requestWake();
        }
      });
  };

  /** wake() of the handle: a pass after wakeDelayMs, shared by every wake until it starts. */
  const wakeDelayMs = o.wakeDelayMs ?? 0;
  const requestWake = (): void => {
    if (wakeDelayMs <= 0) return wake();
    if (stopped || Date.now() < retryAt) return;
    if (running) {
      again = true;
      return;
    }
    if (debounce) return;
    debounce = setTimeout(() => {
      debounce = undefined;
      wake();
    }, wakeDelayMs);
    debounce.unref();
  };

  const timer = setInterval(wake, o.intervalMs);
  timer.unref();
  const first = setTimeout(wake, o.firstRunDelayMs ?? 0);
  first.unref();

  return {
    name: o.name,
    wake: requestWake,
    get consecutiveFailures() {
      return failures;
    },
    runOnce: async () => {
      while (running) await running;
      const p = pass();
      running = p.then(onSuccess, () => o.observe?.pass("error"));
      try {
        return await p;
      } finally {
        running = undefined;
      }
    },
    stop: async () => {
      stopped = true;
      clearInterval(timer);
      clearTimeout(first);
      if (debounce) clearTimeout(debounce);
      while (running) await running;
    },
  };
}
