/**
 * Idempotency kept with the write (docs/decisions/0018-idempotency-with-the-write.md). The gateway
 * scopes an Idempotency-Key and fingerprints the request; both travel to the owning service beside the
 * signed request context, whose signed claims say that the call is keyed and whose record scope it uses
 * (docs/decisions/0031-keyed-writes-reuse-tokens.md). The service records the fingerprint and its result in the SAME transaction as the
 * write. So a retry after a timeout, a lost response or a crash of any process finds the committed
 * result and never writes twice.
 *
 * One call under a key, in one transaction:
 *   1. a transaction-scoped advisory lock on the key's scope, tried, and the key's record read, in one
 *      statement: the lock held by another attempt that may still run → 409 resource_busy with
 *      Retry-After (nothing runs); a record with another fingerprint → 409 idempotency_conflict; a
 *      recorded result → replayed (the recorded answer, or the recorded refusal), nothing runs;
 *   2. otherwise the work runs; every `transaction(db, ctx, fn)` and `singleStatement(db, ctx, fn)` it opens for
 *      the call's context joins this transaction, so its writes and its outbox events commit with the record or
 *      not at all;
 *   3. the result is recorded by one upsert that replaces an expired record: the response message, or a
 *      refusal (a 4xx ApiError other than resource_busy and idempotency_conflict); then the transaction
 *      commits. The read of step 1 may have missed a record that the previous holder of the lock committed
 *      just before: the upsert then finds it live, leaves it and fails, the work is rolled back, and that
 *      record is answered as in step 1.
 * The kit's own statements travel in two messages of several statements, one round trip each (decision
 * 0032): begin with step 1 (and, in a second attempt, the work savepoint), and step 3 with commit. Steps 1 and 3
 * are two functions of the service's schema (decision 0036), so Postgres keeps their plans, and each call of
 * them is a statement prepared once per connection and run by EXECUTE (decision 0042). So a call
 * that runs costs two round trips beyond its work's statements, and what the work locks (rows it changed) is
 * held for one round trip after the work's last statement answered (an organization's outbox lock is taken
 * only at commit: outbox.ts, decision 0035).
 * With `openWithWork` (decision 0040), begin and step 1 as a claim that fails when the key is busy or recorded
 * travel in the message of the work's first statement instead (run there by EXECUTE of its prepared plan): a
 * call that runs costs one round trip beyond its work's statements; a claim that fails voids that statement,
 * and the call runs again with the key opened first.
 * A refusal is recorded without the work's writes. The first attempt sends no savepoint (decision 0028):
 * when the work refuses after a store transaction ran, or a store transaction fails, the attempt is
 * rolled back as a whole and the call runs again in a second attempt that puts a savepoint before the
 * work (and one before each later store transaction), so that a refusal is rolled back alone and
 * recorded under the key's lock, and work that catches a failed store transaction goes on without it
 * (decision 0023).
 * A failure that is not an ApiError (a bug, a lost database), or a 5xx ApiError (a service this one called was
 * out of reach, a deadline: nothing was applied, decision 0044), rolls everything back and records nothing: the
 * same key may run again (docs/decisions/0050-keyed-calls-fail-closed-and-effects-once.md).
 *
 * The work may run more than once before one result commits (a second attempt, a claim that found the key busy).
 * What must happen once per key outside this database (a call to another service, an upload, a filing) goes
 * through `once` (effects.ts), whose results are kept in this module's second table, `idempotency_effect`.
 * The rules a keyed handler follows: docs/writes-under-a-key.md.
 *
 * Both tables are the kit's: the service template's `migrate` creates them for a service that declares
 * `idempotency` (idempotencyMigrations); a service's own migrations never do.
 *
 * Records live 24 h (a leader job reaps them); an expired record is ignored.
 */
import { databaseMetrics, type IdempotencyOutcome } from "./metrics";
import { sql, type Kysely, type Migration, type Transaction } from "kysely";
import type { PoolClient, QueryResult } from "pg";
import { ApiError, boundError, isErrorCode, type ErrorCode } from "@dpp/contract";
import type { RequestContext, TenantContext } from "./context";
import { isConnectionLost, migrateKitPart, preparesStatements, valueLiterals, withConnection } from "./db";
import {
  ambients,
  checkWriteOutside,
  keyedCallBreach,
  keyedCallChecks,
  runChecked,
  type Ambient,
} from "./keyed-work";
import {
  DeadlineExceeded,
  assertBeforeDeadline,
  callDeadline,
  isLockTimeout,
  isStatementTimeout,
  msLeft,
  outcomeUnknown,
} from "./deadline";

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

/**
 * Creates the idempotency tables in the current schema as the kit now makes them (the records, the effects of
 * `once`, and the functions of a keyed call's statements), leaving any that exist as they are. The service
 * template's `migrate` runs it (idempotencyMigrations, `0000_tables`) for a service that declares `idempotency`;
 * a service's own migration that still calls it, as services did before, does nothing more.
 */
export async function createIdempotencyTable(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable("idempotency")
    .ifNotExists()
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
  await sql`create index if not exists idempotency_created_idx on idempotency (created_at)`.execute(db);
  await createIdempotencyFunctions(db);
  await createEffectTable(db);
}

/**
 * The results of the effects run by `once` (effects.ts), one row per key and effect name: claimed (committed
 * before the effect runs, `claimed_until` the end of the claim's lease), then recorded (`result`). Kept as long as
 * the key's records. If it does not exist yet.
 */
async function createEffectTable(db: Kysely<any>): Promise<void> {
  await sql`
    create table if not exists idempotency_effect (
      organization_id text not null,
      livemode boolean not null,
      caller_organization_id text not null,
      idempotency_key text not null,
      name text not null,
      fingerprint text not null,
      method text not null,
      request_id text not null,
      runs integer not null default 1,
      claimed_until timestamptz not null,
      result bytea,
      recorded_at timestamptz,
      created_at timestamptz not null default now(),
      constraint idempotency_effect_pk
        primary key (organization_id, livemode, caller_organization_id, idempotency_key, name))`.execute(db);
  await sql`create index if not exists idempotency_effect_created_idx on idempotency_effect (created_at)`.execute(
    db,
  );
}

/** Whether `table` exists in the current schema. */
async function tableExists(db: Kysely<any>, table: string): Promise<boolean> {
  const { rows } = await sql<{ found: boolean }>`
    select exists (select from pg_tables where schemaname = current_schema() and tablename = ${table}) as found`.execute(
    db,
  );
  return rows[0]?.found === true;
}

/**
 * The two functions a keyed call's own statements run (see `lockAndRead` and `record`), in the current schema,
 * which they name (no search_path lookup when they run). PL/pgSQL keeps the plan of each statement inside per
 * connection, so neither is planned again on every call, as the statements were when each message carried them
 * in full (decision 0036). The key's lock text is the one the statements took, so processes of either kind
 * exclude each other on the same key. The open function reads the record in a statement of its own after the
 * lock is held: a volatile function's statement takes a fresh snapshot, so it sees the record of the attempt
 * that held the lock before (whose commit is visible before its lock is released), however long the function
 * took to be compiled and planned on a new connection. Idempotent (create or replace).
 */
async function createIdempotencyFunctions(db: Kysely<any>): Promise<void> {
  // Open and claim take the same lock and read the same record, each in its own body: a claim that called open
  // (a set-returning function, its result materialized) took 14 µs against 8 (5,000 claims in one statement).
  const KEY_LOCK = sql.raw(
    `hashtextextended('idem:' || p_org || ':' || p_livemode::text || ':' || p_caller || ':' || p_key || %2$L, 0)`,
  );
  const LIVE_RECORD = sql.raw(
    `i.organization_id = p_org and i.livemode = p_livemode and i.caller_organization_id = p_caller
              and i.idempotency_key = p_key and i.created_at > now() - make_interval(hours => %3$s)`,
  );
  await sql`
    do $do$ begin execute format($f$
      create or replace function %1$I.kit_idempotency_open(
        p_org text, p_livemode boolean, p_caller text, p_key text)
      returns table (locked boolean, fingerprint text, method text, request_id text, response bytea, error text)
      language plpgsql as $body$
      begin
        if not pg_try_advisory_xact_lock(${KEY_LOCK}) then
          return query select false, null::text, null::text, null::text, null::bytea, null::text;
          return;
        end if;
        return query
          select true, i.fingerprint, i.method, i.request_id, i.response, i.error::text
          from (select) as one
          left join %1$I.idempotency i on ${LIVE_RECORD};
      end $body$;
      create or replace function %1$I.kit_idempotency_claim(
        p_org text, p_livemode boolean, p_caller text, p_key text)
      returns void language plpgsql as $body$
      begin
        if not pg_try_advisory_xact_lock(${KEY_LOCK}) then
          raise exception %5$L using errcode = 'KI001', detail = 'busy';
        end if;
        perform from %1$I.idempotency i where ${LIVE_RECORD};
        if found then
          raise exception %5$L using errcode = 'KI001', detail = 'recorded';
        end if;
      end $body$;
      create or replace function %1$I.kit_idempotency_record(
        p_org text, p_livemode boolean, p_caller text, p_key text, p_fingerprint text, p_method text,
        p_request_id text, p_response bytea, p_error text)
      returns void language plpgsql as $body$
      begin
        insert into %1$I.idempotency as i (organization_id, livemode, caller_organization_id, idempotency_key,
          fingerprint, method, request_id, response, error)
        values (p_org, p_livemode, p_caller, p_key, p_fingerprint, p_method, p_request_id, p_response, p_error)
        on conflict (organization_id, livemode, caller_organization_id, idempotency_key) do update
          set fingerprint = excluded.fingerprint, method = excluded.method, request_id = excluded.request_id,
              response = excluded.response, error = excluded.error, created_at = now()
          where i.created_at <= now() - make_interval(hours => %3$s);
        if not found then
          raise exception %4$L using errcode = 'invalid_text_representation';
        end if;
      end $body$$f$, current_schema(), current_schema(), ${sql.lit(IDEMPOTENCY_RETENTION_HOURS)}, ${sql.lit(RECORD_KEPT)},
        ${sql.lit(NOT_CLAIMED)});
    end $do$`.execute(db);
}

/**
 * The kit's idempotency tables, applied by the service template's `migrate` to every service that declares
 * `idempotency`, with their own migration table (kit_idempotency_migration), before the service's own migrations.
 * `0000_tables` creates them where no table exists yet (a new service); where a service's migration made the
 * records' table (services did, before the kit made it), it leaves it to the changes after it, each a no-op where
 * createIdempotencyTable made the change already. Sorted by name, so `0000_tables` runs first in a new database;
 * in one migrated before it existed it runs at the next `migrate`, and finds the table (migrateKitPart allows
 * that order).
 */
export const idempotencyMigrations: Record<string, Migration> = {
  "0000_tables": {
    async up(db) {
      if (!(await tableExists(db, "idempotency"))) await createIdempotencyTable(db);
    },
  },
  "0001_functions": {
    async up(db) {
      // An early kit kept refusals as jsonb: the functions take and answer text.
      await sql`
        do $do$ begin
          if (select data_type from information_schema.columns where table_schema = current_schema()
              and table_name = 'idempotency' and column_name = 'error') = 'jsonb' then
            alter table idempotency alter column error type text using error::text;
          end if;
        end $do$`.execute(db);
      await createIdempotencyFunctions(db);
    },
  },
  "0002_claim": { up: createIdempotencyFunctions },
  "0003_claim_own_body": { up: createIdempotencyFunctions },
  "0004_effects": { up: createEffectTable },
};

/** Applies idempotencyMigrations to `schema`: creates the idempotency tables there, or brings them up to date. */
export async function migrateIdempotency(url: string, schema: string): Promise<void> {
  await migrateKitPart(url, schema, "kit_idempotency_migration", idempotencyMigrations);
}

// --- the ambient transaction -------------------------------------------------------------------------------

/** The savepoint a second attempt's work runs after (its key's lock is taken before it, so a rollback keeps the lock). */
const WORK_SAVEPOINT_NAME = "idempotent_work";
const WORK_SAVEPOINT = sql.raw(WORK_SAVEPOINT_NAME);

/** What a store transaction is opened for: the call's context, or null outside any call (a job). */
export type CallScope = RequestContext | null;

/** Runs a store transaction's body inside the idempotent call's transaction (see `transaction`). */
async function joined<T>(outer: Ambient, run: () => Promise<T>): Promise<T> {
  outer.wrote = true;
  if (!outer.savepoints) {
    try {
      return await run();
    } catch (err) {
      outer.broken = true;
      throw err;
    }
  }
  const first = outer.clean;
  outer.clean = false;
  const name = first ? WORK_SAVEPOINT : sql.raw(`sp_${++outer.depth.n}`);
  if (!first) await sql`savepoint ${name}`.execute(outer.trx);
  try {
    const out = await run();
    if (!first) await sql`release savepoint ${name}`.execute(outer.trx);
    return out;
  } catch (err) {
    await sql`rollback to savepoint ${name}`.execute(outer.trx).catch(() => undefined);
    // Rolled back to the work savepoint: nothing is written again.
    if (first) outer.clean = true;
    throw err;
  }
}

/**
 * Runs fn in one transaction: committed when fn returns, rolled back when it throws. For the context of an
 * idempotent call whose work runs, it joins the call's transaction (rolled back alone when fn throws: see the
 * header), so the write commits together with its idempotency record. Every store's transactions go through
 * here, or through `singleStatement`, with the context of the call they serve.
 */
export async function transaction<DB, T>(
  db: Kysely<DB>,
  call: CallScope,
  fn: (trx: Transaction<DB>) => Promise<T>,
): Promise<T> {
  return joinedOr(call, fn, () => {
    const at = callDeadline(call);
    return at === undefined ? db.transaction().execute(fn) : boundedTransaction(db, at, fn);
  });
}

/**
 * A call's own transaction under its work deadline `at` (deadline.ts): its lock and statement waits end when the
 * deadline comes (set with begin, in its message), and it rolls back instead of committing once the
 * deadline has passed. A commit whose connection dropped may or may not have been applied: outcome_unknown.
 */
async function boundedTransaction<DB, T>(
  db: Kysely<DB>,
  at: number,
  fn: (trx: Transaction<DB>) => Promise<T>,
): Promise<T> {
  if (Date.now() >= at) throw new DeadlineExceeded();
  return withConnection(db, async (conn, client) => {
    // The bounds travel with begin, in its message: no round trip more than a plain transaction.
    await client.query(message("begin", timeoutStatements(at)));
    let committing = false;
    try {
      const out = await fn(conn as Transaction<DB>);
      if (Date.now() >= at) throw new DeadlineExceeded();
      committing = true;
      await client.query("commit");
      return out;
    } catch (err) {
      if (!committing) await client.query("rollback").catch(() => undefined);
      // The commit was in flight when the connection dropped: it may have been applied.
      if (committing && isConnectionLost(err)) throw outcomeUnknown();
      throw err;
    }
  });
}

/**
 * A statement's run is bounded a little later than its lock waits: a statement waiting on a lock at the deadline
 * then ends as a lock wait (resource_busy) rather than as a statement timeout, whichever Postgres checks first.
 * Neither bound decides the commit: the deadline is checked again before it.
 */
const STATEMENT_TIMEOUT_SLACK_MS = 100;

/** The transaction's lock and statement waits bounded by the time left until `at`, as statements of a message. */
function timeoutStatements(at: number | undefined): string | false {
  if (at === undefined) return false;
  const left = msLeft(at);
  return message(
    `set local lock_timeout = ${left}`,
    `set local statement_timeout = ${left + STATEMENT_TIMEOUT_SLACK_MS}`,
  );
}

/**
 * fn joined to the transaction of `call`'s idempotent work when there is one, else `alone`. With the keyed-call
 * checks on (tests: keyed-work.ts), `alone` while a keyed call's work runs in this flow fails that call.
 */
function joinedOr<Q, T>(call: CallScope, fn: (q: Q) => Promise<T>, alone: () => Promise<T>): Promise<T> {
  const outer = call ? ambients.get(call) : undefined;
  if (outer) return joined(outer, () => fn(outer.trx as Q));
  if (keyedCallChecks.flow !== undefined) checkWriteOutside(call);
  return alone();
}

/**
 * Runs fn, which sends exactly ONE statement, as a transaction of its own: a statement is atomic by itself,
 * so outside an idempotent call it runs on the pool without begin and commit (one round trip instead of
 * three); inside one it joins the call's transaction as `transaction(db, call, fn)` does. A store's write that is
 * one statement (its outbox row included, `outboxInsert`) goes through here. Two statements in fn would be
 * two transactions outside an idempotent call: use `transaction` for more than one.
 */
export async function singleStatement<DB, T>(
  db: Kysely<DB>,
  call: CallScope,
  fn: (db: Kysely<DB>) => Promise<T>,
): Promise<T> {
  return joinedOr(call, fn, async () => {
    assertBeforeDeadline(call);
    if (call === null) return fn(db);
    try {
      return await fn(db);
    } catch (err) {
      // The statement was sent: it may have committed before its connection dropped.
      if (isConnectionLost(err)) throw outcomeUnknown();
      throw err;
    }
  });
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

type Found = Pick<IdempotencyTable, "fingerprint" | "method" | "request_id" | "response" | "error">;

/** A record is live for the retention window; an older one is ignored, and replaced by the next call. */
const LIVE_SINCE = sql<Date>`now() - make_interval(hours => ${IDEMPOTENCY_RETENTION_HOURS})`;

export interface IdempotentCallOptions<R> {
  db: Kysely<any>;
  /** The call's context: the work's store transactions opened for this same object join the call's transaction. */
  ctx: TenantContext;
  /** The gRPC method (a key used with another method is a conflict as well). */
  method: string;
  encode: (response: R) => Uint8Array;
  decode: (bytes: Uint8Array) => R;
  /** Called once the transaction committed (wakes the outbox relay). */
  onCommitted?: () => void;
  /**
   * The key's lock and check travel with the work's first statement on the call's transaction, in its message:
   * a call that runs costs one round trip less. Only for work that does nothing outside this database before that
   * statement (no call to another service, no upload): a key that is busy or recorded fails that statement, and
   * the call starts again with the key opened first, so the work's code before it ran once more for nothing.
   */
  openWithWork?: boolean;
  /** Told the call's outcome once it is known (the service's metrics: dpp_idempotency_outcomes_total). */
  observe?: (outcome: "new" | "replayed" | "busy" | "conflict") => void;
}

/**
 * The outcome of a keyed call that ended in `err`: a replayed refusal, a key held by another attempt (busy), a
 * key used for another request (conflict), or a refusal or failure of a call that ran (new).
 */
export function idempotencyOutcomeOfError(err: unknown): "new" | "replayed" | "busy" | "conflict" {
  if (!(err instanceof ApiError)) return "new";
  if (err.replayedRequestId) return "replayed";
  if (err.code === "resource_busy") return "busy";
  if (err.code === "idempotency_conflict") return "conflict";
  return "new";
}

/**
 * Thrown inside an attempt's transaction to roll it back as a whole; what to do next. `open_first`: the key's
 * claim sent with the work's first statement found the key busy or recorded (`openWithWork`).
 */
class RolledBack {
  constructor(readonly next: "second_attempt" | "answer_recorded" | "open_first") {}
}

type Attempt<R> =
  | { kind: "answered"; outcome: IdempotentOutcome<R> }
  | { kind: "refused"; refusal: ApiError }
  | { kind: "rolled_back"; next: RolledBack["next"] };

/**
 * Runs `work` once per Idempotency-Key of ctx.idempotency (see the header). Round trips of a call that runs:
 * begin with the key's lock tried and its record read (one statement), in one message; the work's own
 * statements; the record written (one upsert, replacing an expired record) with commit, in one message.
 */
export async function runIdempotent<R>(
  o: IdempotentCallOptions<R>,
  work: () => Promise<R>,
): Promise<IdempotentOutcome<R>> {
  const idem = o.ctx.idempotency;
  if (!idem) return { response: await work(), replayed: false };
  if (!o.observe) return runKeyed(o, work);
  const observe = o.observe;
  return runKeyed(o, work).then(
    (outcome) => {
      observe(outcome.replayed ? "replayed" : "new");
      return outcome;
    },
    (err: unknown) => {
      observe(idempotencyOutcomeOfError(err));
      throw err;
    },
  );
}

async function runKeyed<R>(
  o: IdempotentCallOptions<R>,
  work: () => Promise<R>,
): Promise<IdempotentOutcome<R>> {
  let result = await attempt(o, work, false, o.openWithWork === true);
  if (result.kind === "rolled_back" && result.next === "open_first")
    result = await attempt(o, work, false, false);
  if (result.kind === "rolled_back" && result.next === "second_attempt")
    result = await attempt(o, work, true, false);
  if (result.kind === "rolled_back") {
    // The second attempt's savepoints roll a refusal or a failed store transaction back alone.
    if (result.next !== "answer_recorded")
      throw new Error("an idempotent call's second attempt was rolled back");
    // Another attempt recorded its result after our read: ours is undone, and theirs answered.
    const { rows } = await sql<Found>`
      select fingerprint, method, request_id, response, error from idempotency
      where ${keyScope(o.ctx)} and created_at > ${LIVE_SINCE}`.execute(o.db);
    if (!rows[0]) throw new Error("the idempotency record that refused the write is gone");
    return answerRecorded(o, rows[0]);
  }
  if (result.kind === "refused") throw result.refusal;
  if (!result.outcome.replayed) o.onCommitted?.();
  return result.outcome;
}

/** The record's columns of the call's key. */
function keyScope(t: TenantContext) {
  const idem = t.idempotency!;
  return sql`organization_id = ${t.organizationId} and livemode = ${t.livemode}
    and caller_organization_id = ${idem.callerOrganizationId} and idempotency_key = ${idem.key}`;
}

/** The answer of a recorded result: replayed, or idempotency_conflict when it was recorded for another request. */
function answerRecorded<R>(o: IdempotentCallOptions<R>, found: Found): IdempotentOutcome<R> {
  const idem = o.ctx.idempotency!;
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

/**
 * The calls of the three functions, prepared on each connection of the pool the first time a keyed call uses it
 * (`prepareKeyStatements`) and run by EXECUTE in the kit's messages: Postgres neither parses nor plans them again
 * on every call, as it did while each message carried them as statements of their own (decision 0042). A pool
 * that prepares nothing (`preparedStatements: 0`, for a pooler that keeps no session state) sends the calls
 * themselves.
 */
const KEY_STATEMENTS = {
  kit_idem_open: { params: "text, boolean, text, text", call: "select * from kit_idempotency_open" },
  kit_idem_claim: { params: "text, boolean, text, text", call: "select kit_idempotency_claim" },
  kit_idem_record: {
    params: "text, boolean, text, text, text, text, text, bytea, text",
    call: "select kit_idempotency_record",
  },
};
type KeyStatement = keyof typeof KEY_STATEMENTS;

/** The connections on which KEY_STATEMENTS are prepared (a prepared statement lives as long as its session). */
const keyStatementsOn = new WeakSet<PoolClient>();

/** Prepares KEY_STATEMENTS on the connection, in one message, unless they are already (or the pool prepares none). */
async function prepareKeyStatements(db: Kysely<any>, client: PoolClient): Promise<void> {
  if (keyStatementsOn.has(client) || !preparesStatements(db)) return;
  const prepare = Object.entries(KEY_STATEMENTS).map(([name, { params, call }]) => {
    const n = params.split(",").length;
    return `prepare ${name}(${params}) as ${call}(${Array.from({ length: n }, (_, i) => `$${i + 1}`).join(", ")})`;
  });
  try {
    await client.query(message(...prepare));
  } catch (err) {
    // A PREPARE that failed (a function missing: the kit's migrations not applied yet) leaves those before it
    // prepared, and preparing them again would fail: they are dropped, so that the next keyed call on this
    // connection prepares all three again.
    // A failure of that cleanup (the connection lost) must not hide the PREPARE's own error.
    await client
      .query<{ name: string }>("select name from pg_prepared_statements where name = any($1::text[])", [
        Object.keys(KEY_STATEMENTS),
      ])
      .then(({ rows }) =>
        rows.length > 0 ? client.query(message(...rows.map((r) => `deallocate ${r.name}`))) : undefined,
      )
      .catch(() => undefined);
    throw err;
  }
  keyStatementsOn.add(client);
}

/**
 * A key statement with its values: `execute` of the prepared statement, or the call itself where the pool prepares
 * nothing. A value that cannot travel in a message's text (NUL) is a bug: the gateway refuses such keys.
 */
function keyStatement(db: Kysely<any>, name: KeyStatement, values: unknown[]): string {
  const args = valueLiterals(values);
  if (args === undefined) throw new Error("a value of an idempotency statement holds a NUL character");
  return preparesStatements(db) ? `execute ${name}(${args})` : `${KEY_STATEMENTS[name].call}(${args})`;
}

/** The key's lock tried and its record read, in one statement (kit_idempotency_open). */
function lockAndRead(db: Kysely<any>, t: TenantContext): string {
  const idem = t.idempotency!;
  return keyStatement(db, "kit_idem_open", [
    t.organizationId,
    t.livemode,
    idem.callerOrganizationId,
    idem.key,
  ]);
}

/**
 * The key's lock tried and its record checked, in one statement that fails (KI001, NOT_CLAIMED) when the lock is
 * held or a live record exists (kit_idempotency_claim): sent ahead of the work's first statement, whose message it
 * then ends (`openWithWork`).
 */
function claim(db: Kysely<any>, t: TenantContext): string {
  const idem = t.idempotency!;
  return keyStatement(db, "kit_idem_claim", [
    t.organizationId,
    t.livemode,
    idem.callerOrganizationId,
    idem.key,
  ]);
}

/** What the claim fails with when the key is busy or recorded (see `claim`). */
const NOT_CLAIMED = "the idempotency key is busy or recorded";

function isNotClaimed(err: unknown): boolean {
  return (err as { code?: unknown } | null)?.code === "KI001";
}

/** What the record statement fails with when it finds a live record and leaves it (see `record`). */
const RECORD_KEPT = "the idempotency record is live";

/**
 * The result written (kit_idempotency_record): inserted, or written over an expired record. A live record
 * (committed after the read of `lockAndRead`) stays, and the statement then fails (invalid_text_representation,
 * RECORD_KEPT), so that the commit sent after it in the same message does not run and the work is rolled back.
 */
function record(
  db: Kysely<any>,
  t: TenantContext,
  method: string,
  response: Uint8Array | null,
  error: string | null,
): string {
  const idem = t.idempotency!;
  return keyStatement(db, "kit_idem_record", [
    t.organizationId,
    t.livemode,
    idem.callerOrganizationId,
    idem.key,
    idem.fingerprint,
    method,
    t.requestId,
    response,
    error,
  ]);
}

function isRecordKept(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown } | null;
  return e?.code === "22P02" && typeof e.message === "string" && e.message.includes(RECORD_KEPT);
}

/** Statements sent in one message (node-postgres' simple protocol: a query without values). */
const message = (...statements: Array<string | false>) => statements.filter(Boolean).join(";\n");

/**
 * One attempt in one transaction. Without `savepoints`, rolled back as a whole (next: a second attempt) when the
 * work's writes would have to be undone alone; with them, a refusal is rolled back to the work savepoint.
 * The kit's own statements go in two messages (see the header), as EXECUTEs of statements prepared on the
 * connection (on a pool that prepares nothing, as the calls themselves) with their values written into their text
 * (`keyStatement`): node-postgres sends a query without values in one message however many statements it holds.
 * `withWork` (`openWithWork`, first attempt only): begin and the key's claim go ahead of the work's first
 * statement, in its message; a work that sends none has the key opened before its answer is recorded.
 */
async function attempt<R>(
  o: IdempotentCallOptions<R>,
  work: () => Promise<R>,
  savepoints: boolean,
  withWork: boolean,
): Promise<Attempt<R>> {
  const t = o.ctx;
  const idem = t.idempotency!;
  // The call's work deadline (deadline.ts): not passed before an attempt begins, bounding its waits, and not
  // passed before it commits.
  const at = callDeadline(t);
  assertBeforeDeadline(t);
  return withConnection(o.db, async (trx, client, lead): Promise<Attempt<R>> => {
    await prepareKeyStatements(o.db, client);
    // Whether a transaction may be open on the connection: rolled back before the connection is given back.
    let open = false;
    /** Begin, the key's lock and its record read; an answer when the key is recorded (busy: refused). */
    const opening = async (): Promise<Attempt<R> | undefined> => {
      open = true;
      // The lock, then the read on a snapshot taken once the lock is held (kit_idempotency_open): a record that
      // the attempt holding the lock before committed is seen. The record statement stays the safety net.
      const opened = await client.query(
        message(
          "begin",
          timeoutStatements(at),
          lockAndRead(o.db, t),
          savepoints && `savepoint ${WORK_SAVEPOINT_NAME}`,
        ),
      );
      const row = resultOf(opened, "SELECT").rows[0] as ({ locked: boolean } & Partial<Found>) | undefined;
      if (!row?.locked) throw busyRefusal(idem.key);
      if (row.fingerprint === null || row.fingerprint === undefined) return undefined;
      const outcome = answerRecorded(o, row as Found);
      await client.query("commit");
      open = false;
      return { kind: "answered", outcome };
    };
    /** The claim sent with the work's first statement found the key busy or recorded: this attempt is void. */
    const unclaimed = () => withWork && lead.sent && isNotClaimed(lead.failure);
    try {
      if (withWork) lead.set(message("begin", timeoutStatements(at), claim(o.db, t)));
      else {
        const answered = await opening();
        if (answered) return answered;
      }
      const amb: Ambient = {
        trx,
        savepoints,
        depth: { n: 0 },
        clean: true,
        wrote: false,
        broken: false,
        call: o,
        lead,
      };
      let response: R | undefined;
      let refusal: ApiError | undefined;
      ambients.set(t, amb);
      // With the keyed-call checks (tests only, keyed-work.ts), a breach of the contract fails the call first.
      const checked = keyedCallChecks.flow !== undefined;
      try {
        response = await (checked ? runChecked(amb, work) : work());
      } catch (err) {
        if (checked && keyedCallBreach(amb)) throw keyedCallBreach(amb);
        if (unclaimed()) throw new RolledBack("open_first");
        // A wait ended by the deadline ends the call: another attempt would only wait again.
        if (isLockTimeout(err) || isStatementTimeout(err)) throw err;
        if (amb.broken) throw new RolledBack("second_attempt");
        // An internal_error applied nothing (decision 0044): it is not the request's answer, and the same key may
        // run again (recordableRefusal).
        refusal = recordableRefusal(err);
        if (!refusal) throw err;
      } finally {
        ambients.delete(t);
      }
      if (checked && keyedCallBreach(amb)) throw keyedCallBreach(amb);
      if (withWork) {
        if (unclaimed()) throw new RolledBack("open_first");
        if (lead.withdraw() !== undefined) {
          // The work sent no statement on the call's transaction: the key is opened now, before its answer is
          // recorded (a recorded key answers instead).
          const answered = await opening();
          if (answered) return answered;
        }
      }
      // A store transaction failed and the work went on: its writes cannot be undone alone here.
      if (amb.broken) throw new RolledBack("second_attempt");
      // A refusal is recorded without the work's writes.
      const undo = refusal !== undefined && amb.wrote;
      if (undo && !savepoints) throw new RolledBack("second_attempt");
      const error = refusal
        ? JSON.stringify({
            code: refusal.code,
            message: refusal.message,
            details: refusal.details,
            headers: refusal.headers,
          } satisfies RecordedError)
        : null;
      const bytes = response === undefined ? null : o.encode(response);
      // Past the deadline the caller has been told that nothing was applied (or will be): roll back.
      if (at !== undefined && Date.now() >= at) throw new DeadlineExceeded();
      try {
        await client.query(
          message(
            undo && `rollback to savepoint ${WORK_SAVEPOINT_NAME}`,
            record(o.db, t, o.method, bytes, error),
            "commit",
          ),
        );
      } catch (err) {
        // Another attempt recorded its result after our read: ours is rolled back, theirs answers.
        if (isRecordKept(err)) throw new RolledBack("answer_recorded");
        // The commit was in flight when the connection dropped: it may have been applied.
        if (isConnectionLost(err)) throw outcomeUnknown();
        throw err;
      }
      open = false;
      return refusal
        ? { kind: "refused", refusal }
        : { kind: "answered", outcome: { response: response as R, replayed: false } };
    } catch (err) {
      // The claim's message began a transaction too.
      open ||= lead.sent;
      // A failed statement of a message skips the rest of it (a failed commit ends the transaction itself).
      if (open) await client.query("rollback").catch(() => undefined);
      if (err instanceof RolledBack) return { kind: "rolled_back", next: err.next };
      throw err;
    }
  });
}

/** The result of one statement of a message by its command tag (a message of one statement has one result). */
function resultOf(res: QueryResult | QueryResult[], command: string): QueryResult {
  const found = (Array.isArray(res) ? res : [res]).find((r) => r.command === command);
  if (!found) throw new Error(`no ${command} in the answer to a message`);
  return found;
}

/** internal_errors marked by `recordedFailure`: the request's answer, recorded and replayed. */
const recordedFailures = new WeakSet<ApiError>();

/**
 * Marks an internal_error as the request's answer, recorded under its Idempotency-Key and replayed: a failure after
 * part of the request was applied and committed (a removal whose later batch failed, listing in its details what
 * was applied). An internal_error is otherwise "nothing was applied" and never recorded (decision 0044).
 */
export function recordedFailure(err: ApiError): ApiError {
  recordedFailures.add(err);
  return err;
}

/** Whether `err` was marked by recordedFailure. */
export function isRecordedFailure(err: unknown): boolean {
  return err instanceof ApiError && recordedFailures.has(err);
}

/**
 * A transaction of an effect run by `once` (effects.ts), committed by itself before the effect's result is
 * recorded: the effect's own writes in this service's database that must stay when the call's work then fails
 * (the completed batches of a removal). Opened with the effect's run, never the call's context.
 */
export async function effectTransaction<DB, T>(
  db: Kysely<DB>,
  run: { deadline: number },
  fn: (trx: Transaction<DB>) => Promise<T>,
): Promise<T> {
  return Number.isFinite(run.deadline)
    ? boundedTransaction(db, run.deadline, fn)
    : db.transaction().execute(fn);
}

/** Refusals that are never recorded as a keyed call's answer (see `attempt`). */
const UNRECORDED: ReadonlySet<ErrorCode> = new Set<ErrorCode>(["resource_busy", "idempotency_conflict"]);

/**
 * What a keyed call's work failed with, as the refusal recorded under its key (within the bounds of an error
 * answer, whatever the request echoed); undefined when it is not recorded: anything but an ApiError, an
 * internal_error that applied nothing (decision 0044; a service the work called was out of reach or timed out, a
 * deadline), and the UNRECORDED refusals (a conflict of `once`, effects.ts, is the key's answer to another
 * request). The spec's own 5xx codes (storage_unavailable, portal_unavailable, entitlement_unavailable) are the
 * request's answer and replay, as its retry rule 2 says.
 */
function recordableRefusal(err: unknown): ApiError | undefined {
  if (
    !(err instanceof ApiError) ||
    (err.code === "internal_error" && !recordedFailures.has(err)) ||
    UNRECORDED.has(err.code)
  )
    return undefined;
  return boundError(err);
}

/** A recorded refusal, answered again as first given (its request id included) and marked as a replay. */
function replayedError(e: RecordedError, requestId: string): ApiError {
  const code: ErrorCode = isErrorCode(e.code) ? e.code : "internal_error";
  const err = new ApiError(code, e.message, e.details, { ...e.headers, [REPLAYED_HEADER]: "true" });
  err.replayedRequestId = requestId;
  return err;
}

/**
 * Deletes records past the retention window, and the effect results of `once` (effects.ts) with them; returns how
 * many records. A leader job runs it (service.ts).
 */
export async function reapIdempotencyRecords(db: Kysely<any>, batch = 5_000): Promise<number> {
  await reapExpired(db, "idempotency_effect", batch);
  return reapExpired(db, "idempotency", batch);
}

/** Deletes the rows of `table` past the retention window, `batch` at a time; returns how many. */
async function reapExpired(db: Kysely<any>, table: string, batch: number): Promise<number> {
  const t = sql.table(table);
  let total = 0;
  for (;;) {
    const { rows } = await sql<{ n: number }>`
      with gone as (
        delete from ${t} where ctid in (
          select ctid from ${t}
          where created_at < now() - make_interval(hours => ${IDEMPOTENCY_RETENTION_HOURS})
          limit ${batch})
        returning 1)
      select count(*)::int as n from gone`.execute(db);
    const n = rows[0]?.n ?? 0;
    total += n;
    if (n < batch) return total;
  }
}

// --- keyed items, several in one transaction -----------------------------------------------------------------

/** One keyed item of a batch (keyed-items.ts): its own context, with its idempotency, and its work. */
export interface IdempotentItem<R> {
  ctx: TenantContext;
  work: () => Promise<R>;
}

/** What an item answered: its response (replayed or not), or its refusal (recorded, replayed, or not recorded). */
export type IdempotentItemOutcome<R> = IdempotentOutcome<R> | { error: ApiError };

export interface IdempotentItemsOptions<R> extends Omit<IdempotentCallOptions<R>, "ctx" | "onCommitted"> {
  /** The batch call's context: its deadline bounds every transaction (lock and statement waits, commit). */
  ctx: RequestContext;
  /** The most items one transaction holds: it commits after that many (under 64, a transaction's subtransactions). */
  perTransaction: number;
  /** Called after each commit whose transaction ran an item's work (wakes the outbox relay). */
  onCommitted?: () => void;
  /** Set by another lane of the same batch that failed: this one rolls back its open transaction and stops. */
  stop: { failed: boolean };
}

/** Thrown in a lane when another lane of its batch failed (see IdempotentItemsOptions.stop). */
export class BatchStopped extends Error {
  constructor() {
    super("another transaction of the batch failed");
    this.name = "BatchStopped";
  }
}

/**
 * Runs keyed items one after the other on one connection, `perTransaction` of them in each transaction, with the
 * rules of `runIdempotent` for each (docs/decisions/0053-imports-jobs-rows-and-per-row-keys.md). `next` hands the
 * lane its next item (undefined: none left); `settle` gets each item's outcome once the transaction that holds it
 * committed.
 *
 * An item runs inside a savepoint of the transaction, `idempotent_work` (the work savepoint of runIdempotent's
 * second attempt, which the work's store transactions know how to use: they join the transaction, the first of them
 * rolls back to that savepoint, later ones to savepoints of their own). With `openWithWork`, the savepoint and the
 * key's claim travel ahead of the work's first statement, in its message, as in runIdempotent; a claim that finds
 * the key busy or recorded voids that statement (rolled back to the savepoint) and the key is opened (its lock
 * tried, its record read): a recorded answer or refusal replays, a key another transaction holds answers
 * resource_busy (not recorded; the caller sends the item again), and a key free by then runs the work again, opened
 * first. Then the item's answer, or its refusal after rolling back to the savepoint (nothing of its writes stays),
 * is recorded by the kit's record statement; its savepoint is released with the next item's first message. A record
 * another transaction committed first (the record's statement waited for it, then kept it) rolls the item back to
 * its savepoint and answers that record.
 *
 * Anything else that fails (not an ApiError, an internal_error that applied nothing, a breach of the keyed-call
 * contract, a lock or statement timeout, a failed record or commit, the deadline) rolls back the whole open
 * transaction and is thrown: none of its items is recorded, and the items of this lane's transactions that
 * committed before keep their records (the caller's retry replays them).
 * Round trips of an item that runs: its first statement (with the savepoint and the claim), its other statements,
 * its record; and of a transaction, begin and commit.
 */
export async function runIdempotentItems<R>(
  o: IdempotentItemsOptions<R>,
  next: () => IdempotentItem<R> | undefined,
  settleItem: (item: IdempotentItem<R>, outcome: IdempotentItemOutcome<R>) => void,
): Promise<void> {
  // Each item's outcome is counted as a keyed call's (the service's metrics, found by its pool).
  const metrics = o.observe ? undefined : databaseMetrics(o.db);
  const observe =
    o.observe ?? (metrics ? (outcome: IdempotencyOutcome) => metrics.idempotency(outcome) : undefined);
  const settle = observe
    ? (item: IdempotentItem<R>, outcome: IdempotentItemOutcome<R>) => {
        observe(
          "error" in outcome
            ? idempotencyOutcomeOfError(outcome.error)
            : outcome.replayed
              ? "replayed"
              : "new",
        );
        settleItem(item, outcome);
      }
    : settleItem;
  const at = callDeadline(o.ctx);
  const SP = WORK_SAVEPOINT_NAME;
  await withConnection(o.db, async (trx, client, lead) => {
    await prepareKeyStatements(o.db, client);
    let open = false;
    /** Statements without values to send ahead of the lane's next message (the last item's savepoint release). */
    let ahead = "";
    /** The outcomes of the open transaction's items, settled once it commits. */
    let held: Array<[IdempotentItem<R>, IdempotentItemOutcome<R>]> = [];
    let ran = false;
    const send = (...statements: Array<string | false>) => {
      const text = message(ahead, ...statements);
      ahead = "";
      return client.query(text);
    };
    const commit = async () => {
      if (at !== undefined && Date.now() >= at) throw new DeadlineExceeded();
      try {
        // An unrecorded item's rollback to its savepoint may wait for the next message: it goes before commit.
        await send("commit");
      } catch (err) {
        open = false;
        if (isConnectionLost(err)) throw outcomeUnknown();
        throw err;
      }
      open = false;
      for (const [item, outcome] of held) settle(item, outcome);
      held = [];
      if (ran) o.onCommitted?.();
      ran = false;
    };

    /** The item's key opened in its savepoint (`again`: the savepoint exists, rolled back to): an answer, or none (run). */
    const openKey = async (
      t: TenantContext,
      again: boolean,
    ): Promise<IdempotentItemOutcome<R> | undefined> => {
      const opened = await send(
        again ? `rollback to savepoint ${SP}` : `savepoint ${SP}`,
        lockAndRead(o.db, t),
      );
      const row = resultOf(opened, "SELECT").rows[0] as ({ locked: boolean } & Partial<Found>) | undefined;
      if (row?.locked && (row.fingerprint === null || row.fingerprint === undefined)) return undefined;
      ahead = `release savepoint ${SP}`;
      if (!row?.locked) return { error: busyRefusal(t.idempotency!.key) };
      return answered(o, t, row as Found);
    };

    /** One item, in the open transaction. */
    const runItem = async (item: IdempotentItem<R>): Promise<IdempotentItemOutcome<R>> => {
      const t = item.ctx;
      let withWork = o.openWithWork === true;
      if (!withWork) {
        const answer = await openKey(t, false);
        if (answer) return answer;
      }
      for (;;) {
        let aheadInLead = "";
        if (withWork) {
          aheadInLead = ahead;
          ahead = "";
          lead.set(message(aheadInLead, `savepoint ${SP}`, claim(o.db, t)));
        }
        const amb: Ambient = {
          trx,
          savepoints: true,
          depth: { n: 0 },
          clean: true,
          wrote: false,
          broken: false,
          call: { ctx: t, method: o.method, db: o.db },
          lead,
        };
        let response: R | undefined;
        let refusal: ApiError | undefined;
        let unrecorded: ApiError | undefined;
        const unclaimed = () => withWork && lead.sent && isNotClaimed(lead.failure);
        ambients.set(t, amb);
        const checked = keyedCallChecks.flow !== undefined;
        try {
          response = await (checked ? runChecked(amb, item.work) : item.work());
        } catch (err) {
          if (checked && keyedCallBreach(amb)) throw keyedCallBreach(amb);
          if (!unclaimed()) {
            if (isLockTimeout(err) || isStatementTimeout(err)) throw err;
            refusal = recordableRefusal(err);
            if (!refusal) {
              // resource_busy or idempotency_conflict from the work: the item's answer, never recorded.
              if (!(err instanceof ApiError) || !UNRECORDED.has(err.code)) throw err;
              unrecorded = err;
            }
          }
        } finally {
          ambients.delete(t);
        }
        if (checked && keyedCallBreach(amb)) throw keyedCallBreach(amb);
        // The key's claim went with the work's first statement and found the key busy or recorded.
        if (unclaimed()) {
          lead.withdraw();
          const answer = await openKey(t, true);
          if (answer) return answer;
          withWork = false;
          continue;
        }
        if (withWork && lead.withdraw() !== undefined) {
          // The work sent no statement: its key is opened now (nothing to roll back), before its answer is recorded.
          ahead = aheadInLead;
          const answer = await openKey(t, false);
          if (answer) return answer;
        }
        if (unrecorded) {
          ahead = message(`rollback to savepoint ${SP}`, `release savepoint ${SP}`);
          return { error: unrecorded };
        }
        if (at !== undefined && Date.now() >= at) throw new DeadlineExceeded();
        const error = refusal
          ? JSON.stringify({
              code: refusal.code,
              message: refusal.message,
              details: refusal.details,
              headers: refusal.headers,
            } satisfies RecordedError)
          : null;
        const bytes = response === undefined ? null : o.encode(response);
        try {
          await send(
            refusal !== undefined && amb.wrote && `rollback to savepoint ${SP}`,
            record(o.db, t, o.method, bytes, error),
          );
        } catch (err) {
          if (!isRecordKept(err)) throw err;
          // Another transaction recorded the key first: the item's work is undone, and that record answers.
          await client.query(`rollback to savepoint ${SP}`);
          const { rows } = await sql<Found>`
            select fingerprint, method, request_id, response, error from idempotency
            where ${keyScope(t)} and created_at > ${LIVE_SINCE}`.execute(trx);
          ahead = `release savepoint ${SP}`;
          if (!rows[0]) throw new Error("the idempotency record that refused the write is gone");
          return answered(o, t, rows[0]);
        }
        ahead = `release savepoint ${SP}`;
        ran = true;
        return refusal ? { error: refusal } : { response: response as R, replayed: false };
      }
    };

    try {
      for (let item = next(); item; item = next()) {
        if (o.stop.failed) throw new BatchStopped();
        if (!open) {
          assertBeforeDeadline(o.ctx);
          open = true;
          await client.query(message("begin", timeoutStatements(at)));
        }
        held.push([item, await runItem(item)]);
        if (held.length >= o.perTransaction) await commit();
      }
      if (open) await commit();
    } catch (err) {
      lead.withdraw();
      if (open) await client.query("rollback").catch(() => undefined);
      throw err;
    }
  });
}

/** A key another transaction holds (runIdempotent's answer to it). */
function busyRefusal(key: string): ApiError {
  return new ApiError(
    "resource_busy",
    "A request with this Idempotency-Key is still being processed; retry after the delay.",
    { idempotency_key: key },
    { "Retry-After": String(BUSY_RETRY_AFTER_S) },
  );
}

/** answerRecorded for an item: its replayed answer, or its refusal (replayed, or idempotency_conflict). */
function answered<R>(
  o: Omit<IdempotentCallOptions<R>, "ctx">,
  t: TenantContext,
  found: Found,
): IdempotentItemOutcome<R> {
  try {
    return answerRecorded({ ...o, ctx: t }, found);
  } catch (err) {
    if (err instanceof ApiError) return { error: err };
    throw err;
  }
}
