/**
 * A batch call whose items are each a keyed write of their own (docs/adding-a-service.md, "A service that calls
 * another under per-item keys"; docs/decisions/0053-imports-jobs-rows-and-per-row-keys.md).
 *
 * The batch call itself carries no Idempotency-Key. Each item carries a key its caller derives from something
 * stable (an import's job id and row index), and the serving handler runs the item's work through
 * `runKeyedItem`: the kit's one idempotency path (runIdempotent), with the item's key, a fingerprint of the item and
 * the method of the single write it stands for. So the item's writes, its events and its answer (or its refusal)
 * commit together in the item's own transaction, and the same item sent again (a retried batch, a batch resumed by
 * another worker after a crash, a lost answer) answers what was recorded instead of writing again.
 *
 * The items' records live in a scope of their own: their caller organization is `service:<caller>` (the signed
 * caller's name), never an organization id, so no Idempotency-Key of a public client can meet an item's key.
 */
import { createHash } from "node:crypto";
import type { Kysely } from "kysely";
import { ApiError } from "@dpp/contract";
import { requireTenant, type RequestContext, type TenantContext } from "./context";
import { callDeadline, setCallDeadline } from "./deadline";
import { runIdempotent, type IdempotentOutcome } from "./idempotency";

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
  if (o.key.length < 1 || o.key.length > ITEM_KEY_MAX_LENGTH)
    throw new ApiError("validation_failed", "An item's key must be 1 to 255 characters.", {
      issues: [{ source: { pointer: "/key" }, rule: "length" }],
    });
  const t = requireTenant(o.call.ctx);
  const ctx: TenantContext = {
    ...t,
    idempotency: {
      key: o.key,
      fingerprint: itemFingerprint(o.request),
      callerOrganizationId: `service:${o.call.caller}`,
    },
  };
  delete ctx.outcome;
  if (t.plan) ctx.plan = { ...t.plan };
  const at = callDeadline(o.call.ctx);
  if (at !== undefined) setCallDeadline(ctx, at);
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
