/**
 * Idempotency (docs/decisions/0010), in one place for every route the table
 * marks `idempotent` (the spec's "accepted"). A record per (organization in the
 * path, mode, calling key's organization, Idempotency-Key) holds the request
 * fingerprint (method, path, canonical body), its state and the recorded
 * response; it lives 24 h and is then reaped.
 */
import { createHash } from "node:crypto";
import { sql, type Kysely } from "kysely";
import { ApiError, invalidParameter } from "@dpp/contract";
import { lockKey } from "@dpp/kit";
import type { GatewayDB } from "../store/schema";

export const IDEMPOTENCY_HEADER = "idempotency-key";
export const REPLAYED_HEADER = "Idempotent-Replayed";
export const RETENTION_HOURS = 24;
const MAX_KEY_LENGTH = 255;
/** Seconds a client is told to wait when the same key is still in flight. */
export const BUSY_RETRY_AFTER_S = 1;

/**
 * The Idempotency-Key header, checked: 1 to 255 printable ASCII characters
 * (0x20-0x7E), sent once. Undefined when absent. A malformed header is a 400
 * that claims nothing, so the client fixes it and retries with the same key.
 */
export function readIdempotencyKey(header: string | string[] | undefined): string | undefined {
  if (header === undefined) return undefined;
  const bad = (rule: string, message: string) => {
    const e = invalidParameter("Idempotency-Key", rule, message);
    e.details.issues = [{ source: { header: "Idempotency-Key" }, rule, message }];
    return e;
  };
  if (Array.isArray(header)) throw bad("single_value", "Send the Idempotency-Key header once.");
  if (header.length === 0 || header.length > MAX_KEY_LENGTH)
    throw bad("length", `The Idempotency-Key must be 1 to ${MAX_KEY_LENGTH} characters long.`);
  if (!/^[\x20-\x7e]+$/.test(header))
    throw bad("printable_ascii", "The Idempotency-Key may contain printable ASCII characters only.");
  return header;
}

/** JSON with object keys sorted, so the same document always gives the same text. */
export function canonicalJson(v: unknown): string {
  if (v === null || typeof v !== "object") return JSON.stringify(v) ?? "null";
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(",")}]`;
  const o = v as Record<string, unknown>;
  return `{${Object.keys(o)
    .sort()
    .filter((k) => o[k] !== undefined)
    .map((k) => `${JSON.stringify(k)}:${canonicalJson(o[k])}`)
    .join(",")}}`;
}

/** SHA-256 over method, path and canonical body (no body and `{}` differ). */
export function fingerprintOf(method: string, path: string, body: unknown): string {
  return createHash("sha256")
    .update(`${method.toUpperCase()}\n${path}\n${body === undefined ? "" : canonicalJson(body)}`)
    .digest("hex");
}

export interface IdempotencyScope {
  organizationId: string;
  livemode: boolean;
  callerOrganizationId: string;
  key: string;
}

export interface RecordedResponse {
  status: number;
  /** The JSON text exactly as first sent. */
  body: string;
  headers: Record<string, string>;
}

export type ClaimResult = { kind: "claimed"; id: number } | { kind: "replay"; response: RecordedResponse };

/**
 * Whether an error answer is recorded against the key. Recorded: whatever the
 * owning service (or the handler, after the claim) decided, 5xx and 412
 * included. Not recorded: a gateway deadline or an unreachable service (the
 * kit client's internal_error with reason upstream_*), a gateway fault (a
 * non-ApiError), and a resource_busy (nothing ran; the documented remedy is
 * to wait Retry-After and send the same request again).
 */
export function isRecordable(err: unknown): boolean {
  if (!(err instanceof ApiError)) return false;
  if (err.code === "resource_busy") return false;
  const reason = err.details.reason;
  if (err.code === "internal_error" && typeof reason === "string" && reason.startsWith("upstream_"))
    return false;
  return true;
}

export class IdempotencyStore {
  constructor(
    private readonly db: Kysely<GatewayDB>,
    /** How long an in-flight claim holds before it counts as abandoned (a gateway died mid-request). */
    private readonly leaseMs: number,
  ) {}

  async claim(
    scope: IdempotencyScope,
    fingerprint: string,
    meta: { method: string; path: string; requestId: string; keyId?: string },
  ): Promise<ClaimResult> {
    for (let attempt = 0; attempt < 3; attempt++) {
      const inserted = await this.db
        .insertInto("idempotency_record")
        .values({
          organization_id: scope.organizationId,
          livemode: scope.livemode,
          caller_organization_id: scope.callerOrganizationId,
          idempotency_key: scope.key,
          fingerprint,
          method: meta.method,
          path: meta.path,
          state: "in_flight",
          locked_until: sql<Date>`now() + ${`${this.leaseMs} milliseconds`}::interval`,
          request_id: meta.requestId,
          key_id: meta.keyId ?? null,
        })
        .onConflict((oc) =>
          oc
            .columns(["organization_id", "livemode", "caller_organization_id", "idempotency_key"])
            .doNothing(),
        )
        .returning("id")
        .executeTakeFirst();
      if (inserted) return { kind: "claimed", id: inserted.id };

      const row = await this.db
        .selectFrom("idempotency_record")
        .select([
          "id",
          "fingerprint",
          "state",
          "response_status",
          "response_body",
          "response_headers",
          sql<boolean>`created_at < now() - ${`${RETENTION_HOURS} hours`}::interval`.as("expired"),
          sql<boolean>`locked_until <= now()`.as("abandoned"),
        ])
        .where("organization_id", "=", scope.organizationId)
        .where("livemode", "=", scope.livemode)
        .where("caller_organization_id", "=", scope.callerOrganizationId)
        .where("idempotency_key", "=", scope.key)
        .executeTakeFirst();
      if (!row) continue; // released or reaped meanwhile: claim again
      if (row.expired) {
        // Past retention but not reaped yet: the key is free again.
        await this.db.deleteFrom("idempotency_record").where("id", "=", row.id).execute();
        continue;
      }
      if (row.fingerprint !== fingerprint)
        throw new ApiError(
          "idempotency_conflict",
          "This Idempotency-Key was already used with a different request (method, path or body); use a new key for a new request.",
          { idempotency_key: scope.key },
        );
      if (row.state === "finished")
        return {
          kind: "replay",
          response: {
            status: row.response_status!,
            body: row.response_body ?? "",
            headers: row.response_headers ?? {},
          },
        };
      if (row.abandoned) {
        const taken = await this.db
          .updateTable("idempotency_record")
          .set({
            locked_until: sql<Date>`now() + ${`${this.leaseMs} milliseconds`}::interval`,
            request_id: meta.requestId,
            key_id: meta.keyId ?? null,
          })
          .where("id", "=", row.id)
          .where("state", "=", "in_flight")
          .where("locked_until", "<=", sql<Date>`now()`)
          .returning("id")
          .executeTakeFirst();
        if (taken) return { kind: "claimed", id: taken.id };
      }
      throw new ApiError(
        "resource_busy",
        `A request with this Idempotency-Key is still in progress; retry after ${BUSY_RETRY_AFTER_S} s.`,
        { idempotency_key: scope.key, reason: "idempotency_key_in_flight" },
        { "Retry-After": String(BUSY_RETRY_AFTER_S) },
      );
    }
    throw new ApiError(
      "resource_busy",
      "The Idempotency-Key is contended; retry shortly.",
      {
        idempotency_key: scope.key,
        reason: "idempotency_key_in_flight",
      },
      { "Retry-After": String(BUSY_RETRY_AFTER_S) },
    );
  }

  async finish(id: number, response: RecordedResponse): Promise<void> {
    await this.db
      .updateTable("idempotency_record")
      .set({
        state: "finished",
        response_status: response.status,
        response_body: response.body,
        response_headers: sql`${JSON.stringify(response.headers)}::jsonb` as unknown as Record<
          string,
          string
        >,
        finished_at: sql<Date>`now()`,
      })
      .where("id", "=", id)
      .where("state", "=", "in_flight")
      .execute();
  }

  /** Gives the key back: the answer must not be recorded, so a same-key retry runs again. */
  async release(id: number): Promise<void> {
    await this.db
      .deleteFrom("idempotency_record")
      .where("id", "=", id)
      .where("state", "=", "in_flight")
      .execute();
  }

  /**
   * Deletes records older than the retention window, in batches, under an
   * advisory lock so one replica reaps at a time. Returns rows deleted, or -1
   * when another replica holds the lock.
   */
  async reap(batch = 5000): Promise<number> {
    return this.db.transaction().execute(async (trx) => {
      const { rows } = await sql<{ locked: boolean }>`select pg_try_advisory_xact_lock(${lockKey(
        "gateway.idempotency_reaper",
      )}) as locked`.execute(trx);
      if (!rows[0]?.locked) return -1;
      let total = 0;
      for (;;) {
        const res = await sql`delete from idempotency_record where id in (
            select id from idempotency_record
            where created_at < now() - ${`${RETENTION_HOURS} hours`}::interval
            limit ${batch})`.execute(trx);
        const n = Number(res.numAffectedRows ?? 0);
        total += n;
        if (n < batch) return total;
      }
    });
  }
}
