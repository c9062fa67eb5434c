/**
 * The keyed call whose work is running, as the kit's own modules find it (not part of the kit's public index):
 * the call's transaction by its context object (idempotency.ts, decision 0037), which `once` (effects.ts) uses.
 */
import type { Kysely } from "kysely";
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
