/**
 * Side effects once per Idempotency-Key: what a keyed handler does outside its service's database (reserving
 * GTINs in another service, an upload to object storage, a filing with a portal) and must not do again when the
 * call's work runs again (docs/writes-under-a-key.md). The work of a keyed call may run two or three times before
 * its writes commit once (a second attempt, decision 0028; a key claimed with the work, decision 0040), and again
 * after a failure that recorded nothing; its database writes are undone each time, an effect outside is not.
 *
 *   const ref = await once(call, "upload", (effectKey, run) =>
 *     storage.put(object, { idempotencyKey: effectKey, signal: run.signal }));
 *
 * `once` runs the effect in atomic phases, each committed on its own, outside the call's transaction:
 *   1. the effect's record is read (on the call's transaction, which holds the key's lock: under `openWithWork`
 *      the key's claim goes with this read, so the key is claimed before anything runs outside the database).
 *      Recorded: its result is answered, the effect does not run. Claimed by a run whose lease has not ended:
 *      409 resource_busy with Retry-After. Claimed by another request: 409 idempotency_conflict (not recorded).
 *   2. the claim: inserted (or taken over from a run whose lease ended) and committed, with a lease until the
 *      call's work deadline;
 *   3. the effect runs, given its effect key and the deadline (`EffectRun`);
 *   4. its result is recorded and committed; the rest of the work then runs in the keyed transaction, which
 *      commits the work's writes and the call's answer once.
 * The claim and the record are single statements on connections of their own (`queryAside`, db.ts), so a call
 * holding its transaction's connection never waits for a second one of the same pool.
 *
 * The guarantee, precisely: while no process dies and no connection drops between phases 2 and 4, the effect runs
 * at most once per key and name, and its recorded result is what every later run of the work under that key gets
 * (an attempt, a retry, a replay of the work after a failure). A run that ended between the claim and the record
 * (a crash, a lost connection, a record that failed, an effect that threw) leaves the claim without a result; once
 * its lease has ended, the next run under the key runs the effect again with the SAME effect key and `run` one
 * higher. At most one result is ever recorded per key and name (the first; a later run answers it). So the
 * effect is exactly-once when the remote system deduplicates by the effect key (an Idempotency-Key of another
 * kit service, storage's or a portal's request id), and at-least-once otherwise; a remote system that cannot
 * deduplicate can at least be asked, when `run > 1`, whether the effect key already did something.
 *
 * A key whose effect ran and whose work then was refused records that refusal: it replays, and the effect's
 * result stays recorded (reaped with the key's record after 24 h). A call that fails with a 5xx after an effect
 * may have run is answered outcome_unknown (retry with the SAME key), never "nothing was applied"
 * (`failureAfterEffects`, decision 0044).
 *
 * Only handlers that call `once` pay for it: the read, the claim and the record (three round trips, two on
 * connections of the aside pool); a replay of the work pays the read.
 */
import { createHash } from "node:crypto";
import { sql } from "kysely";
import { ApiError } from "@dpp/contract";
import type { CallContext, RequestContext } from "./context";
import { queryAside } from "./db";
import { DeadlineExceeded, outcomeUnknown } from "./deadline";
import { BUSY_RETRY_AFTER_S, IDEMPOTENCY_RETENTION_HOURS, isRecordedFailure } from "./idempotency";
import { ambients } from "./keyed-work";
import type { Logger } from "./logger";

/** What an effect is given besides its effect key. */
export interface EffectRun {
  /**
   * The effect's key: the same for every run of this effect under the call's Idempotency-Key (derived from the
   * key's scope, the method and the effect's name). Pass it to the remote system for its own deduplication.
   */
  key: string;
  /** The call's work deadline (ms since epoch; Infinity when the call has none): finish before it. */
  deadline: number;
  /** Milliseconds left until the deadline (at least 1; Infinity without one): give a remote call no more. */
  msLeft(): number;
  /** Aborted when the deadline passes: hand it to fetch or the remote client. */
  signal: AbortSignal;
  /**
   * How many runs of this effect were started under the key, this one included: above 1, an earlier run may have
   * reached the remote system without its result being recorded.
   */
  run: number;
}

export interface OnceOptions<T> {
  /** The result as recorded (JSON text by default; a result of `undefined` is recorded as nothing). */
  encode?: (value: T) => Uint8Array;
  decode?: (bytes: Uint8Array) => T;
}

/** How long a claim holds when the call has no work deadline. */
export const EFFECT_LEASE_MS_DEFAULT = 30_000;

/** The calls in which an effect ran, or may have: their failures are not "nothing was applied". */
const affected = new WeakSet<RequestContext>();

/**
 * Runs `effect` once per Idempotency-Key of the call and `name` (see the header), and answers its result, the
 * recorded one when it already ran. Inside the work of a keyed call (a handler of a service that declares
 * `idempotency`); a call without a key runs the effect once, with an effect key of its own. `name` tells the
 * effects of one handler apart ("reserve-gtins", `row-${n}`); one name is one effect.
 */
export async function once<T>(
  call: Pick<CallContext, "ctx" | "deadline">,
  name: string,
  effect: (effectKey: string, run: EffectRun) => Promise<T>,
  options: OnceOptions<T> = {},
): Promise<T> {
  const { ctx, deadline } = call;
  const idem = ctx.idempotency;
  if (!idem) {
    // Nothing to run once against: the call runs its work once.
    if (Date.now() >= deadline) throw new DeadlineExceeded();
    const key = effectKeyOf(["call", ctx.requestId, ctx.organizationId ?? "", name]);
    affected.add(ctx);
    return effect(key, effectRun(key, deadline, 1));
  }
  const amb = ambients.get(ctx);
  if (!amb)
    throw new Error(
      `once("${name}") runs inside the work of the call under an Idempotency-Key whose context it is given ` +
        "(a handler of a service that declares idempotency)",
    );
  const { method, db, ctx: t } = amb.call;
  const encode = options.encode ?? encodeJson;
  const decode = options.decode ?? (decodeJson as (bytes: Uint8Array) => T);
  const scope = [t.organizationId, t.livemode, idem.callerOrganizationId, idem.key, name] as const;
  const key = effectKeyOf(["key", method, ...scope]);

  let runs: number | undefined;
  for (let tries = 0; runs === undefined; tries++) {
    // Another run keeps changing the record between the read and the claim: it is running.
    if (tries > 2) throw effectBusy(idem.key, BUSY_RETRY_AFTER_S);
    // 1. The record, read on the call's transaction (which claims the key first under openWithWork).
    const { rows } = await sql<EffectRow>`
      select fingerprint, method, result, runs, claimed_until > now() as claimed,
        greatest(1, ceil(extract(epoch from claimed_until - now())))::int as claimed_for_s
      from idempotency_effect
      where organization_id = ${scope[0]} and livemode = ${scope[1]} and caller_organization_id = ${scope[2]}
        and idempotency_key = ${scope[3]} and name = ${scope[4]}
        and created_at > now() - make_interval(hours => ${IDEMPOTENCY_RETENTION_HOURS})`.execute(amb.trx);
    const found = rows[0];
    if (found) {
      if (found.fingerprint !== idem.fingerprint || found.method !== method)
        throw new ApiError(
          "idempotency_conflict",
          "This Idempotency-Key was already used with a different request; use a new key for a new request.",
          { idempotency_key: idem.key },
        );
      if (found.result !== null) {
        affected.add(ctx);
        return decode(found.result);
      }
      if (found.claimed) throw effectBusy(idem.key, found.claimed_for_s);
    }
    // 2. The claim, committed before the effect runs.
    if (Date.now() >= deadline) throw new DeadlineExceeded();
    const leaseMs = Number.isFinite(deadline) ? Math.max(1, deadline - Date.now()) : EFFECT_LEASE_MS_DEFAULT;
    const claimed = await queryAside<{ runs: number }>(db, CLAIM, [
      ...scope,
      idem.fingerprint,
      method,
      t.requestId,
      leaseMs,
    ]);
    // No row: another run changed the record since it was read; it is read again.
    runs = claimed.rows[0]?.runs;
  }

  // 3. The effect.
  affected.add(ctx);
  let result: T;
  try {
    result = await effect(key, effectRun(key, deadline, runs));
  } catch (err) {
    // Whether it reached the remote system is not known: its claim is released, so that a retry runs it again at
    // once, with the same effect key.
    await queryAside(db, RELEASE, [...scope, runs]).catch(() => undefined);
    throw err;
  }
  // 4. Its result, recorded: the first recorded result of the key and name is the one every run answers.
  const bytes = encode(result);
  const recorded = await queryAside(db, RECORD, [...scope, bytes]);
  if (recorded.rowCount === 1) return decode(bytes);
  const { rows } = await queryAside<{ result: Uint8Array | null }>(db, RECORDED, [...scope]);
  const first = rows[0]?.result;
  if (!first) throw new Error(`the record of effect "${name}" is gone`);
  return decode(first);
}

/**
 * The answer to give for a failed call: an internal_error (or a failure that is not an ApiError) of a call in
 * which an effect ran (or may have) becomes
 * outcome_unknown, to be retried under the SAME Idempotency-Key, which answers the recorded effect instead of
 * running it again; a new key would (decision 0044 says that a 5xx applied nothing). The failure is logged.
 * Any other failure, and a configuration_error, is answered as it is.
 */
export function failureAfterEffects(ctx: RequestContext, err: unknown, log: () => Logger): unknown {
  if (!affected.has(ctx)) return err;
  // A refusal, and a 5xx of the spec's own (storage_unavailable ...), which is recorded and replays, as they are.
  if (err instanceof ApiError && (err.code !== "internal_error" || isRecordedFailure(err))) return err;
  log().warn(
    { err },
    "a call failed after an effect outside the database ran or may have run; answered outcome_unknown",
  );
  // Without a key there is nothing to retry under: the caller checks before sending it again (outcomeUnknown).
  if (!ctx.idempotency) return outcomeUnknown();
  return outcomeUnknown(
    undefined,
    "The request did not finish, and a step of it outside this service's database may have been applied. Retry " +
      "with the SAME Idempotency-Key, which finishes it without applying that step again; a new key would apply it " +
      "again.",
  );
}

interface EffectRow {
  fingerprint: string;
  method: string;
  result: Uint8Array | null;
  runs: number;
  claimed: boolean;
  claimed_for_s: number;
}

const KEY_SCOPE = `organization_id = $1 and livemode = $2 and caller_organization_id = $3 and idempotency_key = $4
  and name = $5`;
const EXPIRED = `e.created_at <= now() - make_interval(hours => ${IDEMPOTENCY_RETENTION_HOURS})`;

/**
 * The claim: a new row, or a row taken over when its lease ended without a result (the same request), or when it
 * expired (anything). Answers the run's number; no row when the record is claimed or recorded.
 */
const CLAIM = `
  insert into idempotency_effect as e (organization_id, livemode, caller_organization_id, idempotency_key, name,
    fingerprint, method, request_id, claimed_until)
  values ($1, $2, $3, $4, $5, $6, $7, $8, now() + make_interval(secs => $9::double precision / 1000))
  on conflict (organization_id, livemode, caller_organization_id, idempotency_key, name) do update set
    fingerprint = excluded.fingerprint, method = excluded.method, request_id = excluded.request_id,
    claimed_until = excluded.claimed_until, result = null, recorded_at = null,
    runs = case when ${EXPIRED} then 1 else e.runs + 1 end,
    created_at = case when ${EXPIRED} then now() else e.created_at end
  where ${EXPIRED} or (e.result is null and e.claimed_until <= now() and e.fingerprint = excluded.fingerprint
    and e.method = excluded.method)
  returning runs`;

/** The result recorded, unless one is already. */
const RECORD = `update idempotency_effect set result = $6, recorded_at = now() where ${KEY_SCOPE} and result is null`;

/** The claim of run $6 released (its effect failed): the next run need not wait for its lease. */
const RELEASE = `update idempotency_effect set claimed_until = now()
  where ${KEY_SCOPE} and result is null and runs = $6`;

const RECORDED = `select result from idempotency_effect where ${KEY_SCOPE}`;

function effectBusy(key: string, retryAfterS: number): ApiError {
  return new ApiError(
    "resource_busy",
    "A request with this Idempotency-Key is still being processed; retry after the delay.",
    { idempotency_key: key },
    { "Retry-After": String(Math.max(BUSY_RETRY_AFTER_S, retryAfterS)) },
  );
}

/** A stable effect key: 43 base64url characters of SHA-256 over the parts, prefixed. */
function effectKeyOf(parts: ReadonlyArray<string | boolean>): string {
  return `ek_${createHash("sha256").update(JSON.stringify(parts)).digest("base64url")}`;
}

function effectRun(key: string, deadline: number, run: number): EffectRun {
  let signal: AbortSignal | undefined;
  const msLeft = () =>
    Number.isFinite(deadline) ? Math.max(1, Math.floor(deadline - Date.now())) : Infinity;
  return {
    key,
    deadline,
    msLeft,
    run,
    get signal() {
      return (signal ??= Number.isFinite(deadline)
        ? AbortSignal.timeout(msLeft())
        : new AbortController().signal);
    },
  };
}

function encodeJson(value: unknown): Uint8Array {
  return value === undefined ? new Uint8Array(0) : Buffer.from(JSON.stringify(value), "utf8");
}

function decodeJson(bytes: Uint8Array): unknown {
  return bytes.length === 0 ? undefined : JSON.parse(Buffer.from(bytes).toString("utf8"));
}
