/**
 * The keyed call whose work is running, as the kit's own modules find it (not part of the kit's public index):
 * the call's transaction by its context object (idempotency.ts, decision 0037), and the checks of the keyed-call
 * contract (docs/writes-under-a-key.md) that run only when a service runs under tests.
 *
 * The checks need to know, at a store transaction or a client call, whether a keyed call's work is running in
 * the same async flow: that is an AsyncLocalStorage, whose first `run` enables async hooks for the whole process
 * (decision 0037). So it exists only once `enableKeyedCallChecks` was called: by `startServiceUnderTest`
 * (@dpp/kit/testing) and by a service started with KIT_TEST_CHECKS=1 (the e2e harness sets it). Otherwise
 * nothing of it is made, and what the kit's paths pay is one property read that finds it absent.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import type { Kysely } from "kysely";
import { ApiError } from "@dpp/contract";
import type { RequestContext, TenantContext } from "./context";
import type { LeadingStatements } from "./db";

/** What a keyed call's work runs in: its transaction and how it is kept. */
export interface Ambient {
  /** The call's connection, in its transaction. */
  trx: Kysely<any>;
  /**
   * The second attempt (decision 0028): store transactions are protected by savepoints. In the first attempt none
   * is sent, and a failed store transaction marks the attempt `broken` instead.
   */
  savepoints: boolean;
  depth: { n: number };
  /**
   * Nothing was written since the work savepoint (second attempt): the next store transaction needs no savepoint
   * of its own (rolling back to the work savepoint is the same), so the usual call, one store transaction, costs no
   * savepoint round trip beyond the work's.
   */
  clean: boolean;
  /** A store transaction ran: the call's transaction may hold writes of the work. */
  wrote: boolean;
  /** A store transaction failed with no savepoint to roll back to: this attempt cannot commit. */
  broken: boolean;
  /** The call: its context, method and database (`once`, effects.ts, reads them). */
  call: { ctx: TenantContext; method: string; db: Kysely<any> };
  /**
   * The statements waiting for the work's first statement on the call's transaction (`openWithWork`: begin and
   * the key's claim); nothing waits once they were sent, or when the key was opened before the work.
   */
  lead: LeadingStatements;
}

/**
 * The transaction of each keyed call whose work runs, by the call's context object (the `ctx` the handler was
 * given, which the work passes to its store transactions). Not an AsyncLocalStorage: its async hooks would make
 * every promise of the process pay, keyed or not (decision 0037).
 */
export const ambients = new WeakMap<RequestContext, Ambient>();

/** The checks' state: `flow` exists only once they are enabled. */
export const keyedCallChecks: { flow: AsyncLocalStorage<Ambient> | undefined } = { flow: undefined };

/** The first breach of the contract found in each running keyed call (checks enabled). */
const breaches = new WeakMap<Ambient, ApiError>();

/**
 * Turns the keyed-call checks on for this process (a thread of the local stack has its own): every keyed call's
 * work then runs in an AsyncLocalStorage, and a breach fails the call (`keyedCallBreach`). For tests only: the
 * storage's async hooks cost every promise of the process.
 */
export function enableKeyedCallChecks(): void {
  keyedCallChecks.flow ??= new AsyncLocalStorage<Ambient>();
}

/** Runs a keyed call's work so that the checks can find it (only called with the checks enabled). */
export function runChecked<R>(amb: Ambient, work: () => Promise<R>): Promise<R> {
  return keyedCallChecks.flow!.run(amb, work);
}

/** The keyed call whose work is running in this async flow, if any (checks enabled); undefined once it settled. */
function runningKeyedCall(): Ambient | undefined {
  const amb = keyedCallChecks.flow?.getStore();
  return amb && ambients.get(amb.call.ctx) === amb ? amb : undefined;
}

/**
 * Records a breach of the keyed-call contract in the running call and returns it, to be thrown where it was
 * found; the call fails with the first one even when the work caught it (idempotency.ts), and nothing is recorded
 * under its key.
 */
function breach(amb: Ambient, rule: string, message: string): ApiError {
  const err = new ApiError(
    "configuration_error",
    `${amb.call.method}: ${message} (docs/writes-under-a-key.md)`,
    { reason: "keyed_call_contract", rule, method: amb.call.method },
  );
  if (!breaches.has(amb)) breaches.set(amb, err);
  return err;
}

/** The first breach found in the call's work (checks enabled). */
export function keyedCallBreach(amb: Ambient): ApiError | undefined {
  return breaches.get(amb);
}

/**
 * Checks a store transaction (or single statement) that does not join a keyed call's transaction: opened while a
 * keyed call's work runs in the same flow, with `null` or another call's context, its writes would commit
 * without the key's record (checks enabled; a no-op otherwise).
 */
export function checkWriteOutside(opened: RequestContext | null): void {
  const amb = runningKeyedCall();
  if (!amb) return;
  throw breach(
    amb,
    "write_outside_keyed_transaction",
    `a store transaction was opened with ${opened === null ? "null" : "another context"} while the work of a ` +
      "call under an Idempotency-Key runs: its writes would commit without the key's record, and again on a retry; " +
      "pass the handler's own ctx (or run an effect outside the database with once())",
  );
}

/**
 * Checks a call of a kit client made while a keyed call's work runs in the same flow: under `openWithWork`, before
 * the work's first statement the key is not claimed yet, and a busy or recorded key runs that code again (checks
 * enabled; a no-op otherwise).
 */
export function checkClientCall(target: string): void {
  const amb = runningKeyedCall();
  if (!amb || !amb.lead.waiting) return;
  throw breach(
    amb,
    "client_call_before_claim",
    `${target} was called before the work's first statement under openWithWork: the key is not claimed yet, so ` +
      "the call may run again for a busy or recorded key; send a statement first, wrap it in once(), or drop " +
      "openWithWork",
  );
}
