/**
 * A call's deadline, honoured by the service that serves it (docs/decisions/0044-a-5xx-means-nothing-applied.md).
 *
 * The caller gives the service a work deadline and waits DEADLINE_GRACE_MS past it for the answer (createClient
 * sets the gRPC deadline to the work deadline plus the grace; addService takes the grace off again). Before its
 * work deadline the service either commits and answers, or rolls back and says so; it never commits after it:
 *   - a transaction's lock and statement waits are bounded by the time left (`set local lock_timeout` and
 *     `statement_timeout`), and a transaction whose deadline passed before its commit rolls back;
 *   - work whose deadline passed before it started is not started.
 * So the caller's answer agrees with what the service did: a refusal or a timeout the service reports means that
 * nothing was applied. Only a call that got no answer at all (the service stalled past the grace, or the
 * connection dropped while the call was in flight), or whose commit was in flight when the database connection
 * dropped, has an outcome nobody can know: it is answered `outcome_unknown`, to be retried under the SAME
 * Idempotency-Key.
 */
import { ApiError } from "@dpp/contract";
import type { RequestContext } from "./context";

/**
 * How long a caller waits past the work deadline it gave a service: the time for the service's answer (or the
 * commit it sent just before the deadline) to reach it. Both sides of every call are the kit's, so both use this.
 */
export const DEADLINE_GRACE_MS = 1000;

/** Work deadlines (ms since epoch) by the call context a handler was given (as `ambients`: no AsyncLocalStorage). */
const deadlines = new WeakMap<RequestContext, number>();

/** Records the work deadline of the call served with `ctx` (addService). */
export function setCallDeadline(ctx: RequestContext, at: number): void {
  deadlines.set(ctx, at);
}

/** The work deadline of the call served with `ctx`; undefined outside a call (a job, a migration). */
export function callDeadline(ctx: RequestContext | null): number | undefined {
  return ctx ? deadlines.get(ctx) : undefined;
}

/** Milliseconds left until `at` (at least 1: Postgres reads 0 as "no timeout"). */
export function msLeft(at: number): number {
  return Math.max(1, Math.floor(at - Date.now()));
}

/**
 * Thrown where a call's work deadline has passed before its transaction could commit (or before its work
 * started): the transaction is rolled back and nothing is recorded under the key; answered as `deadlineRefusal`.
 */
export class DeadlineExceeded extends Error {
  constructor() {
    super("the call's deadline passed before its work could commit; rolled back");
    this.name = "DeadlineExceeded";
  }
}

/** Throws DeadlineExceeded when the work deadline of `ctx`'s call has passed. */
export function assertBeforeDeadline(ctx: RequestContext | null): void {
  const at = callDeadline(ctx);
  if (at !== undefined && Date.now() >= at) throw new DeadlineExceeded();
}

/** The answer of a call that its service gave up at its deadline: nothing was applied, so any retry is safe. */
export function deadlineRefusal(): ApiError {
  return new ApiError(
    "internal_error",
    "The request did not finish within its deadline and nothing was changed; retry it.",
    { reason: "upstream_timeout" },
    { "Retry-After": "1" },
  );
}

/** The answer of a call that waited on a lock another request held until its deadline: nothing was applied. */
export function lockWaitRefusal(): ApiError {
  return new ApiError(
    "resource_busy",
    "Another request is changing this resource; nothing was changed. Retry after the delay.",
    { reason: "lock_wait_timeout" },
    { "Retry-After": "1" },
  );
}

/**
 * The answer of a write whose outcome cannot be known: it may or may not have been applied. Retried under the
 * SAME Idempotency-Key it is answered by its committed result, or runs once; a new key could apply it twice.
 */
export function outcomeUnknown(service?: string, message?: string): ApiError {
  return new ApiError(
    "internal_error",
    message ??
      "The request may or may not have been applied: the answer was lost. Retry with the SAME Idempotency-Key " +
        "(never a new one); a write sent without a key should be checked before it is sent again.",
    service === undefined ? { reason: "outcome_unknown" } : { reason: "outcome_unknown", service },
    { "Retry-After": "1" },
  );
}

/** Postgres' lock_not_available (55P03): a lock wait ended by the transaction's lock_timeout. */
export function isLockTimeout(err: unknown): boolean {
  return (err as { code?: unknown } | null)?.code === "55P03";
}

/** Postgres' query_canceled (57014): a statement ended by its statement_timeout. */
export function isStatementTimeout(err: unknown): boolean {
  return (err as { code?: unknown } | null)?.code === "57014";
}
