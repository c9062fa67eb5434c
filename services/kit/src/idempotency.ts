/**
 * Idempotency kept with the write (docs/decisions/0018-idempotency-with-the-write.md). The gateway
 * scopes an Idempotency-Key and fingerprints the request; both travel in the signed request context
 * to the owning service, which records the fingerprint and its result in the SAME transaction as the
 * write. So a retry after a timeout, a lost response or a crash of any process finds the committed
 * result and never writes twice.
 *
 * One call under a key, in one transaction:
 *   1. a transaction-scoped advisory lock on the key's scope, tried: held by another attempt that may
 *      still run → 409 resource_busy with Retry-After (nothing runs);
 *   2. the key's record, if any: another fingerprint → 409 idempotency_conflict; a recorded result →
 *      replayed (the recorded answer, or the recorded refusal), nothing runs;
 *   3. otherwise the work runs inside a savepoint; every `transaction(db, fn)` it opens joins this one
 *      (as a nested savepoint), so its writes and its outbox events commit with the record or not at
 *      all;
 *   4. the result is recorded: the response message, or a refusal (an ApiError other than
 *      resource_busy: its writes are rolled back to the savepoint first); then the transaction commits.
 * A failure that is not an ApiError (a bug, a lost database) rolls everything back and records nothing:
 * the same key may run again.
 *
 * Records live 24 h (a leader job reaps them); an expired record is ignored.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { sql, type Kysely, type Transaction } from "kysely";
import { ApiError, isErrorCode, type ErrorCode } from "@dpp/contract";
import type { TenantContext } from "./context";

export const IDEMPOTENCY_RETENTION_HOURS = 24;
/** Seconds a client is told to wait when the same key is still being worked on. */
export const BUSY_RETRY_AFTER_S = 1;
/** The response header that marks a replayed answer. */
export const REPLAYED_HEADER = "Idempotent-Replayed";

export interface IdempotencyTable {
  organization_id: string;
  livemode: boolean;
  caller_organization_id: string;
  idempotency_key: string;
  fingerprint: string;
  /** The gRPC method the key was used with. */
  method: string;
  request_id: string;
  /** The response message (protobuf binary), when the call answered. */
  response: Buffer | null;
  /** The refusal, when the call was refused: {code, message, details, headers} as JSON text (its key order kept). */
  error: string | RecordedError | null;
  created_at: Date;
}

export interface WithIdempotency {
  idempotency: IdempotencyTable;
}

/** Creates the idempotency table in the service's schema; called from a migration. */
export async function createIdempotencyTable(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable("idempotency")
    .addColumn("organization_id", "text", (c) => c.notNull())
    .addColumn("livemode", "boolean", (c) => c.notNull())
    .addColumn("caller_organization_id", "text", (c) => c.notNull())
    .addColumn("idempotency_key", "text", (c) => c.notNull())
    .addColumn("fingerprint", "text", (c) => c.notNull())
    .addColumn("method", "text", (c) => c.notNull())
    .addColumn("request_id", "text", (c) => c.notNull())
    .addColumn("response", "bytea")
    .addColumn("error", "text")
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint("idempotency_pk", [
      "organization_id",
      "livemode",
      "caller_organization_id",
      "idempotency_key",
    ])
    .execute();
  await sql`create index idempotency_created_idx on idempotency (created_at)`.execute(db);
}

// --- the ambient transaction -------------------------------------------------------------------------------

const ambient = new AsyncLocalStorage<{ trx: Transaction<any>; depth: { n: number } }>();

/**
 * Runs fn in one transaction: committed when fn returns, rolled back when it throws. Inside an idempotent
 * call it joins the call's transaction as a savepoint (rolled back alone when fn throws), so the write
 * commits together with its idempotency record. Every store's transactions go through here.
 */
export async function transaction<DB, T>(
  db: Kysely<DB>,
  fn: (trx: Transaction<DB>) => Promise<T>,
): Promise<T> {
  const outer = ambient.getStore();
  if (!outer) return db.transaction().execute(fn);
  const name = sql.raw(`sp_${++outer.depth.n}`);
  await sql`savepoint ${name}`.execute(outer.trx);
  try {
    const out = await fn(outer.trx as Transaction<DB>);
    await sql`release savepoint ${name}`.execute(outer.trx);
    return out;
  } catch (err) {
    await sql`rollback to savepoint ${name}`.execute(outer.trx).catch(() => undefined);
    throw err;
  }
}

// --- one call under a key ------------------------------------------------------------------------------------

export interface IdempotentOutcome<R> {
  response: R;
  replayed: boolean;
}

interface RecordedError {
  code: string;
  message: string;
  details: Record<string, unknown>;
  headers: Record<string, string>;
}

/** The advisory lock key of one key's scope in this schema. */
function scopeLock(t: TenantContext, callerOrganizationId: string, key: string) {
  return sql<number>`hashtextextended(${`idem:${t.organizationId}:${t.livemode}:${callerOrganizationId}:${key}`} || current_schema(), 0)`;
}

export interface IdempotentCallOptions<R> {
  db: Kysely<any>;
  ctx: TenantContext;
  /** The gRPC method (a key used with another method is a conflict as well). */
  method: string;
  encode: (response: R) => Uint8Array;
  decode: (bytes: Uint8Array) => R;
  /** Called once the transaction committed (wakes the outbox relay). */
  onCommitted?: () => void;
}

/** Runs `work` once per Idempotency-Key of ctx.idempotency (see the header). */
export async function runIdempotent<R>(
  o: IdempotentCallOptions<R>,
  work: () => Promise<R>,
): Promise<IdempotentOutcome<R>> {
  const idem = o.ctx.idempotency;
  if (!idem) return { response: await work(), replayed: false };
  const t = o.ctx;
  let refusal: ApiError | undefined;
  const outcome = await o.db.transaction().execute(async (trx) => {
    const { rows } = await sql<{ ok: boolean }>`select pg_try_advisory_xact_lock(${scopeLock(
      t,
      idem.callerOrganizationId,
      idem.key,
    )}) as ok`.execute(trx);
    if (!rows[0]?.ok)
      throw new ApiError(
        "resource_busy",
        "A request with this Idempotency-Key is still being processed; retry after the delay.",
        { idempotency_key: idem.key },
        { "Retry-After": String(BUSY_RETRY_AFTER_S) },
      );
    const where = (q: any) =>
      q
        .where("organization_id", "=", t.organizationId)
        .where("livemode", "=", t.livemode)
        .where("caller_organization_id", "=", idem.callerOrganizationId)
        .where("idempotency_key", "=", idem.key);
    const found = (await where(trx.selectFrom("idempotency").selectAll())
      .where("created_at", ">", sql<Date>`now() - make_interval(hours => ${IDEMPOTENCY_RETENTION_HOURS})`)
      .executeTakeFirst()) as IdempotencyTable | undefined;
    if (found) {
      if (found.fingerprint !== idem.fingerprint || found.method !== o.method)
        throw new ApiError(
          "idempotency_conflict",
          "This Idempotency-Key was already used with a different request; use a new key for a new request.",
          { idempotency_key: idem.key },
        );
      if (found.response) return { response: o.decode(found.response), replayed: true };
      // Text keeps the recorded key order (a table created as jsonb by an earlier kit answers an object).
      const recorded = typeof found.error === "string" ? JSON.parse(found.error) : found.error;
      throw replayedError(recorded as RecordedError, found.request_id);
    }
    // An expired record is replaced.
    await where(trx.deleteFrom("idempotency")).execute();
    await sql`savepoint idempotent_work`.execute(trx);
    let response: R | undefined;
    try {
      response = await ambient.run({ trx, depth: { n: 0 } }, work);
    } catch (err) {
      if (!(err instanceof ApiError) || err.code === "resource_busy") throw err;
      await sql`rollback to savepoint idempotent_work`.execute(trx);
      refusal = err;
    }
    await trx
      .insertInto("idempotency")
      .values({
        organization_id: t.organizationId,
        livemode: t.livemode,
        caller_organization_id: idem.callerOrganizationId,
        idempotency_key: idem.key,
        fingerprint: idem.fingerprint,
        method: o.method,
        request_id: t.requestId,
        response: response === undefined ? null : Buffer.from(o.encode(response)),
        error: refusal
          ? JSON.stringify({
              code: refusal.code,
              message: refusal.message,
              details: refusal.details,
              headers: refusal.headers,
            } satisfies RecordedError)
          : null,
      })
      .execute();
    return response === undefined ? undefined : { response, replayed: false };
  });
  if (outcome && !outcome.replayed) o.onCommitted?.();
  if (refusal) throw refusal;
  return outcome!;
}

/** A recorded refusal, answered again as first given (its request id included) and marked as a replay. */
function replayedError(e: RecordedError, requestId: string): ApiError {
  const code: ErrorCode = isErrorCode(e.code) ? e.code : "internal_error";
  const err = new ApiError(code, e.message, e.details, { ...e.headers, [REPLAYED_HEADER]: "true" });
  err.replayedRequestId = requestId;
  return err;
}

/** Deletes records past the retention window; returns how many. A leader job runs it (service.ts). */
export async function reapIdempotencyRecords(db: Kysely<any>, batch = 5_000): Promise<number> {
  let total = 0;
  for (;;) {
    const { rows } = await sql<{ n: number }>`
      with gone as (
        delete from idempotency where ctid in (
          select ctid from idempotency
          where created_at < now() - make_interval(hours => ${IDEMPOTENCY_RETENTION_HOURS})
          limit ${batch})
        returning 1)
      select count(*)::int as n from gone`.execute(db);
    const n = rows[0]?.n ?? 0;
    total += n;
    if (n < batch) return total;
  }
}
