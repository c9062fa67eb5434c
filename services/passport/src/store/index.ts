/**
 * Every query of the passport service. Methods return rows, counts or undefined: they never raise API errors
 * and never build domain events (the use cases in src/app do both). A constraint the database enforces comes
 * out as a store-level error (`UniqueConflict`) or a typed result (`insertClaims` answers what it inserted).
 *
 * Every query filters on the tenant (organization_id, livemode). The one exception is the test-mode retention
 * sweep (`deleteTestPassportsPastRetention`), a platform job over the test data of every organization; it still
 * filters `livemode = false` and deletes each passport's dependent rows per tenant.
 *
 * `PassportStore` runs reads and single-statement writes on the pool (through the kit's singleStatement, given the
 * call's context, so that inside an idempotent call they join the call's transaction). `transaction(ctx, fn)`
 * gives fn a `PassportTx` bound to one transaction: the same reads, plus row locks, the writes and `appendEvent`
 * (the outbox row, through the kit's writeOutbox). Whatever fn throws rolls the whole transaction back. A write
 * that causes an event records it in its own statement where it can (`createPassport`, `updateVersioned`: the
 * kit's outboxInsert), one round trip fewer.
 */
export { PassportStore } from "./passport-store";
export { PassportReads } from "./passport-reads";
export { PassportTx } from "./passport-tx";
export * from "./types";
