/**
 * A batch call whose items are each a keyed write of their own (docs/adding-a-service.md, "A service that calls
 * another under per-item keys"; docs/decisions/0053-imports-jobs-rows-and-per-row-keys.md).
 *
 * The batch call itself carries no Idempotency-Key. Each item carries a key its caller derives from something
 * stable (an import's job id and row index), and the serving handler runs the items' work through
 * `runKeyedItems`: the kit's one idempotency path (runIdempotent's statements and rules, runIdempotentItems), with
 * each item's key, a fingerprint of the item and the method of the single write it stands for, the items a few
 * dozen to a transaction, each in a savepoint of its own. So an item's writes, its events and its answer (or its
 * refusal) commit together, and the same item sent again (a retried batch, a batch resumed by another worker after
 * a crash, a lost answer) answers what was recorded instead of writing again. `runKeyedItem` runs one item in a
 * transaction of its own (runIdempotent itself).
 *
 * The items' records live in a scope of their own: their caller organization is `service:<caller>` (the signed
 * caller's name), never an organization id, so no Idempotency-Key of a public client can meet an item's key.
 */
import { createHash } from "node:crypto";
import type { Kysely } from "kysely";
import { ApiError } from "@dpp/contract";
import { requireTenant, type RequestContext, type TenantContext } from "./context";
import { callDeadline, setCallDeadline } from "./deadline";
import {
  BatchStopped,
  runIdempotent,
  runIdempotentItems,
  type IdempotentItem,
  type IdempotentItemOutcome,
  type IdempotentOutcome,
} from "./idempotency";

/** The longest item key (an Idempotency-Key's rule). */
const ITEM_KEY_MAX_LENGTH = 255;

/** JSON with its object keys sorted: the same item gives the same text whatever its key order. */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(",")}]`;
  if (v !== null && typeof v === "object")
    return `{${Object.keys(v as object)
      .sort()
      .filter((k) => (v as Record<string, unknown>)[k] !== undefined)
      .map((k) => `${JSON.stringify(k)}:${canonical((v as Record<string, unknown>)[k])}`)
      .join(",")}}`;
  return JSON.stringify(v);
}

/** The fingerprint of an item: SHA-256 (hex) of its canonical JSON. */
export function itemFingerprint(request: unknown): string {
  return createHash("sha256").update(canonical(request)).digest("hex");
}

export interface KeyedItemOptions<R> {
  /** The service's pool (its schema holds the kit's idempotency table). */
  db: Kysely<any>;
  /** The batch call's context (its tenant, plan and deadline) and its signed caller's name. */
  call: { ctx: RequestContext; caller: string };
  /** The item's key, stable across every send of the same item (e.g. `<job id>:<row index>`). */
  key: string;
  /** The item as sent: its fingerprint tells a repeated item from another one under the same key. */
  request: unknown;
  /** The method of the single write the item stands for (a key used with another method is a conflict). */
  method: string;
  encode: (response: R) => Uint8Array;
  decode: (bytes: Uint8Array) => R;
  onCommitted?: () => void;
  /** As the service's definition declares it (IdempotentCallOptions.openWithWork). */
  openWithWork?: boolean;
}

/** An item's key refused for its length (validation_failed on /key). */
function badKey(): ApiError {
  return new ApiError("validation_failed", "An item's key must be 1 to 255 characters.", {
    issues: [{ source: { pointer: "/key" }, rule: "length" }],
  });
}

/**
 * The item's own context: the batch call's tenant, plan and deadline, with the item's idempotency (its key, the
 * fingerprint of the item as sent, and the caller's scope). Throws validation_failed for a key of a bad length.
 */
function itemContext(
  call: { ctx: RequestContext; caller: string },
  key: string,
  request: unknown,
): TenantContext {
  if (key.length < 1 || key.length > ITEM_KEY_MAX_LENGTH) throw badKey();
  const t = requireTenant(call.ctx);
  const ctx: TenantContext = {
    ...t,
    idempotency: {
      key,
      fingerprint: itemFingerprint(request),
      callerOrganizationId: `service:${call.caller}`,
    },
  };
  delete ctx.outcome;
  if (t.plan) ctx.plan = { ...t.plan };
  const at = callDeadline(call.ctx);
  if (at !== undefined) setCallDeadline(ctx, at);
  return ctx;
}

/**
 * Runs `work` once per item key: `work` gets the item's own context (the batch call's tenant, plan and deadline,
 * with the item's idempotency), which its store transactions must be opened with, exactly as a keyed handler
 * uses its `call.ctx`. Answers the recorded result when the item was done before (`replayed`), and throws the
 * recorded refusal (an ApiError) when it was refused before.
 */
export async function runKeyedItem<R>(
  o: KeyedItemOptions<R>,
  work: (ctx: TenantContext) => Promise<R>,
): Promise<IdempotentOutcome<R>> {
  const ctx = itemContext(o.call, o.key, o.request);
  return runIdempotent(
    {
      db: o.db,
      ctx,
      method: o.method,
      encode: o.encode,
      decode: o.decode,
      onCommitted: o.onCommitted,
      openWithWork: o.openWithWork,
    },
    () => work(ctx),
  );
}

/** Transactions of one batch side by side (runKeyedItems), by default. */
export const KEYED_ITEMS_LANES = 3;
/**
 * Items per transaction, by default: a transaction commits after that many. Under 64: each item's savepoint that
 * wrote is a subtransaction with an id of its own, and past 64 of them in one open transaction every snapshot
 * taken meanwhile, in any session, must look them up in pg_subtrans (the subtransaction cache overflows).
 */
export const KEYED_ITEMS_PER_TRANSACTION = 50;

export interface KeyedItemsOptions<R> extends Omit<KeyedItemOptions<R>, "key" | "request"> {
  /**
   * Groups of item indexes that run one after the other, in their order, in one lane (items that may conflict, as
   * two creates of one external_id: the first wins as it would from one client). An item in no group runs alone.
   * By default every item is a group of its own.
   */
  order?: number[][];
  /** Transactions side by side (KEYED_ITEMS_LANES). */
  lanes?: number;
  /** Items per transaction (KEYED_ITEMS_PER_TRANSACTION). */
  perTransaction?: number;
}

/** An item's answer: its response (replayed or not), or its refusal (`replayed`: a recorded refusal answered again). */
export type KeyedItemResult<R> =
  | { response: R; replayed: boolean; error?: undefined }
  | { error: ApiError; replayed: boolean; response?: undefined };

/**
 * runKeyedItem for every item of a batch, in a few transactions instead of one per item: `lanes` transactions side
 * by side (one connection each), each committing after `perTransaction` items. An item runs in a savepoint of its
 * lane's transaction with the rules of runIdempotent (runIdempotentItems, idempotency.ts): replayed when its key is
 * recorded, its work joined to the transaction otherwise (the store transactions it opens with its ctx use the
 * lane's connection and the item's savepoint), its answer recorded with it; a refusal (an ApiError that
 * runIdempotent records) rolls the item back to its savepoint, nothing of its writes stays, and is recorded; a key
 * another transaction holds answers resource_busy. Its events commit with the transaction; `onCommitted` is called
 * after each commit.
 *
 * Any other failure (not an ApiError, an internal_error that applied nothing, a failed record or commit, the
 * deadline) rolls back the transaction it happened in, stops the other lanes (each rolls back its open transaction)
 * and fails the call: no answer of those transactions was recorded; items of transactions that committed before
 * keep their records, and the caller's retry replays them.
 *
 * Answers in the items' order.
 */
export async function runKeyedItems<R, I extends { key: string; request: unknown }>(
  o: KeyedItemsOptions<R>,
  items: readonly I[],
  work: (item: I, ctx: TenantContext, index: number) => Promise<R>,
): Promise<KeyedItemResult<R>[]> {
  requireTenant(o.call.ctx);
  const out: KeyedItemResult<R>[] = new Array(items.length);
  const indexOf = new Map<IdempotentItem<R>, number>();
  const prepared: Array<IdempotentItem<R> | undefined> = items.map((item, i) => {
    let ctx: TenantContext;
    try {
      ctx = itemContext(o.call, item.key, item.request);
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      out[i] = { error: err, replayed: false };
      return undefined;
    }
    const run: IdempotentItem<R> = { ctx, work: () => work(item, ctx, i) };
    indexOf.set(run, i);
    return run;
  });
  const grouped = new Set<number>();
  const groups: number[][] = [];
  for (const group of o.order ?? []) {
    const g = group.filter((i) => prepared[i] !== undefined && !grouped.has(i));
    g.forEach((i) => grouped.add(i));
    if (g.length) groups.push(g);
  }
  prepared.forEach((p, i) => {
    if (p && !grouped.has(i)) groups.push([i]);
  });
  const stop = { failed: false };
  // Each lane takes whole groups: a group's items stay in one lane, in order.
  const lane = async () => {
    let mine: number[] = [];
    const take = (): IdempotentItem<R> | undefined => {
      if (!mine.length) mine = groups.shift() ?? [];
      const i = mine.shift();
      return i === undefined ? undefined : prepared[i];
    };
    try {
      await runIdempotentItems(
        {
          db: o.db,
          ctx: o.call.ctx,
          method: o.method,
          encode: o.encode,
          decode: o.decode,
          onCommitted: o.onCommitted,
          openWithWork: o.openWithWork,
          perTransaction: o.perTransaction ?? KEYED_ITEMS_PER_TRANSACTION,
          stop,
        },
        take,
        (item, outcome: IdempotentItemOutcome<R>) => {
          const i = indexOf.get(item)!;
          out[i] =
            "error" in outcome
              ? { error: outcome.error, replayed: outcome.error.replayedRequestId !== undefined }
              : { response: outcome.response, replayed: outcome.replayed };
        },
      );
    } catch (err) {
      stop.failed = true;
      throw err;
    }
  };
  const lanes = Math.max(1, Math.min(o.lanes ?? KEYED_ITEMS_LANES, groups.length));
  const settled = await Promise.allSettled(Array.from({ length: groups.length ? lanes : 0 }, lane));
  const failures = settled.flatMap((s) => (s.status === "rejected" ? [s.reason as unknown] : []));
  const first = failures.find((e) => !(e instanceof BatchStopped)) ?? failures[0];
  if (failures.length) throw first;
  return out;
}
