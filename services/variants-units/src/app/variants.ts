/**
 * The variants of a passport (spec: Variants; docs/decisions/0051-variants-and-units.md).
 *
 * GTINs are claimed through the passport service, which owns the organization's GTIN namespace. The order of the
 * steps is what keeps claims and rows from drifting apart when a process dies between them: a claim is always made
 * before its variant row exists (create: the rows are inserted while the claim is being made, in a transaction that
 * commits only after it) and released only after the row is gone (removal), so the only leftover
 * a crash can make is a claim without its row, which the passport service's reconciler releases
 * (services/passport/src/app/gtin-reconciler.ts); the reconciler here (reconcile.ts) re-claims a row whose claim
 * went missing.
 */
import { createHash } from "node:crypto";
import { ApiError, correctableRefusal, normalizeGtin } from "@dpp/contract";
import {
  once,
  recordedFailure,
  requireTenant,
  type CallContext,
  type RequestContext,
  type TenantContext,
} from "@dpp/kit";
import {
  conflictsWithStored,
  MAX_VARIANTS_PER_PASSPORT,
  reviewFingerprint,
  VARIANT_CATEGORIES,
  variantIdsFor,
  type NormalizedVariant,
} from "../domain/variants";
import { LimitReached, type CreatedVariant, type VariantRow } from "../store/store";
import {
  notFound,
  readContext,
  readPassport,
  reviewUrl,
  type PassportView,
  type VariantsUnitsApp,
} from "./deps";

type Call = Pick<CallContext, "ctx" | "deadline">;

/** Statuses whose variants can change. */
const EDITABLE = ["draft", "published", "deactivated"];

function checkCategory(p: PassportView): void {
  if (!VARIANT_CATEGORIES.includes(p.category))
    throw new ApiError(
      "invalid_request",
      `A ${p.category} passport has no variants: variants are for textile and general passports${p.category === "battery" ? "; a battery passport carries units" : ""}.`,
      { reason: "category_without_variants", category: p.category, allowed_categories: VARIANT_CATEGORIES },
    );
}

function checkEditable(p: PassportView): void {
  if (!EDITABLE.includes(p.status))
    throw new ApiError("wrong_status", `The variants of a ${p.status} passport cannot change.`, {
      status: p.status,
      allowed_statuses: EDITABLE,
    });
}

function connectorRefusal(
  app: VariantsUnitsApp,
  t: TenantContext,
  p: PassportView,
  removal: boolean,
): ApiError {
  return new ApiError(
    "connector_writes_drafts_only",
    removal
      ? "A connector cannot remove variants; a person can."
      : `A connector may only add variants to drafts; this passport is ${p.status}. A person can make the change.`,
    {
      passport_id: p.id,
      status: p.status,
      reason: removal ? "connector_cannot_remove" : "not_a_draft",
      review_url: reviewUrl(app, t, p.id),
    },
  );
}

/** A claim request's fingerprint: the same batch, the same fingerprint on every run. */
const fingerprintOf = (value: unknown) => createHash("sha256").update(JSON.stringify(value)).digest("hex");

/** The context of a keyed call to the passport service: the effect's key as its Idempotency-Key. */
function effectContext(
  ctx: RequestContext,
  t: TenantContext,
  effectKey: string,
  request: unknown,
): RequestContext {
  return {
    ...readContext(ctx),
    idempotency: {
      key: effectKey,
      fingerprint: fingerprintOf(request),
      callerOrganizationId: t.organizationId,
    },
  };
}

/** gtin_in_use from the passport service, its pointers moved from the claims to the request's variants. */
function asVariantRefusal(err: unknown): unknown {
  if (!(err instanceof ApiError) || err.code !== "gtin_in_use") return err;
  const conflicts = (err.details.conflicts as { index: number; gtin: string }[] | undefined) ?? [];
  const { issues: _i, index: _x, ...rest } = err.details;
  return correctableRefusal(
    "gtin_in_use",
    err.message,
    conflicts.map((c) => ({
      pointer: `/variants/${c.index}/gtin`,
      rule: "gtin_in_use",
      message: `GTIN ${c.gtin} belongs to another passport.`,
    })),
    rest,
  );
}

export interface CreateInput {
  passportId: string;
  variants: NormalizedVariant[];
  keyName: string;
}

/** The refusals a passport's category and status make for a change of its variants, in their order. */
function checkPassportForVariants(
  app: VariantsUnitsApp,
  t: TenantContext,
  p: PassportView,
  connector: boolean,
): void {
  checkCategory(p);
  checkEditable(p);
  if (connector && p.status !== "draft") throw connectorRefusal(app, t, p, false);
}

/** The passports whose GTINs a batch may claim: what checkPassportForVariants lets through. */
const claimCondition = (connector: boolean) => ({
  categories: [...VARIANT_CATEGORIES],
  statuses: connector ? ["draft"] : EDITABLE,
});

/**
 * A refusal of the claim, as this call answers it: the passport's category or status (the claim's condition) as
 * checkPassportForVariants refuses them, a GTIN held elsewhere with its pointer on the request's variant.
 */
function claimRefusal(app: VariantsUnitsApp, t: TenantContext, err: unknown, connector: boolean): unknown {
  if (err instanceof ApiError && err.details.reason === "claim_condition") {
    const d = err.details as { passport_id: string; category: string; status: string };
    checkPassportForVariants(
      app,
      t,
      { id: d.passport_id, category: d.category, status: d.status, gtin: null },
      connector,
    );
  }
  return asVariantRefusal(err);
}

export async function createVariants(
  app: VariantsUnitsApp,
  call: Call,
  input: CreateInput,
): Promise<CreatedVariant[]> {
  const { ctx } = call;
  const t = requireTenant(ctx);
  const connector = ctx.credentialKind === "connector";
  const passportId = input.passportId;
  // Checks against the stored rows before anything is claimed. The passport's category and status are checked by
  // the claim itself (its condition), unless the batch is refused here: then they are read first, so that their
  // refusals still come before these.
  const stored = await app.store.variantKeys(t, passportId);
  const requested = input.variants.length;
  const refused =
    stored.length + requested > MAX_VARIANTS_PER_PASSPORT
      ? limitReached(stored.length, requested)
      : conflictsWithStored(input.variants, stored);
  if (refused) {
    checkPassportForVariants(app, t, await readPassport(app, ctx, passportId), connector);
    throw refused;
  }

  const agent = connector
    ? { keyId: ctx.keyId ?? "", keyName: input.keyName, sourceClass: "agent_asserted" }
    : null;
  // The rows' insert runs beside the claim, in a transaction that commits only once the claim is made (and, under
  // a key, recorded) and rolls back if it is not: no row is ever visible without its claim (see the header).
  const claimed = settled();
  const insert = (ids: string[], until?: Promise<unknown>) =>
    app.store.insertVariants(
      ctx,
      t,
      passportId,
      input.variants.map((v, i) => ({
        id: ids[i]!,
        gtin: v.gtin,
        size: v.size,
        colour: v.colour,
        pair_key: v.pairKey,
      })),
      agent,
      MAX_VARIANTS_PER_PASSPORT,
      until,
    );
  let inserting: Promise<CreatedVariant[]> | undefined;
  let ids: string[];
  try {
    // The claim: once per Idempotency-Key; the rows' ids come from its effect key, so every run names the same rows.
    ids = await once(call, "claim-gtins", async (effectKey, run) => {
      const ids = variantIdsFor(effectKey, input.variants.length);
      inserting = insert(ids, claimed.promise);
      inserting.catch(() => undefined); // answered below, once the claim is settled
      const claims = input.variants.map((v, i) => ({ gtin: v.gtin, passportId, ownerId: ids[i]! }));
      try {
        await app.passport.claimGtins(
          { claims, condition: claimCondition(connector) },
          { context: effectContext(ctx, t, effectKey, claims), deadlineMs: msLeft(run) },
        );
      } catch (err) {
        throw claimRefusal(app, t, err, connector);
      }
      return ids;
    });
  } catch (err) {
    // Rolled back before the refusal is answered.
    claimed.reject(err);
    await inserting?.catch(() => undefined);
    throw err;
  }
  claimed.resolve();
  try {
    // A run whose claim was recorded by an earlier run (the same key) made no claim, so nothing checked the passport:
    // it is read and checked (it may have changed since), then the rows are inserted.
    if (!inserting) checkPassportForVariants(app, t, await readPassport(app, ctx, passportId), connector);
    const rows = await (inserting ?? insert(ids));
    if (!ctx.idempotency) app.onCommitted();
    return rows;
  } catch (err) {
    if (err instanceof LimitReached) throw limitReached(err.current, requested);
    throw err;
  }
}

/** A promise settled from outside; a rejection nobody awaited is not reported as unhandled. */
function settled(): { promise: Promise<void>; resolve: () => void; reject: (err: unknown) => void } {
  let resolve!: () => void;
  let reject!: (err: unknown) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  promise.catch(() => undefined);
  return { promise, resolve, reject };
}

function limitReached(current: number, requested: number): ApiError {
  return new ApiError(
    "variant_limit_reached",
    `A passport has at most ${MAX_VARIANTS_PER_PASSPORT} variants; it has ${current} and ${requested} were sent.`,
    { limit: MAX_VARIANTS_PER_PASSPORT, current, requested },
  );
}

export async function listVariants(
  app: VariantsUnitsApp,
  ctx: RequestContext,
  passportId: string,
  fetch: number,
  afterSeq: number | undefined,
  gtin: string | undefined,
): Promise<VariantRow[]> {
  const t = requireTenant(ctx);
  await readPassport(app, ctx, passportId);
  return app.store.listVariants(t, passportId, fetch, afterSeq, gtin);
}

export async function variantReview(app: VariantsUnitsApp, ctx: RequestContext, passportId: string) {
  const t = requireTenant(ctx);
  await readPassport(app, ctx, passportId);
  return reviewOf(await app.store.allVariants(t, passportId));
}

export function reviewOf(rows: VariantRow[]) {
  return {
    rows,
    fingerprint: reviewFingerprint(rows),
    agentWrittenCount: rows.filter((r) => r.agent_key_id !== null).length,
  };
}

/** The destructive-operation cap: refused before anything is removed. */
function capRefusal(cap: number): ApiError {
  const now = new Date();
  const midnight = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1);
  const retryAfter = Math.max(1, Math.ceil((midnight - now.getTime()) / 1000));
  return new ApiError(
    "rate_limited",
    `The organization's plan allows ${cap} variant removals from published or deactivated passports per day (UTC); the cap is reached.`,
    { reason: "destructive_operation_cap", limit: cap, resets_at: new Date(midnight).toISOString() },
    { "Retry-After": String(retryAfter) },
  );
}

const capOf = (ctx: RequestContext) => ctx.plan?.destructiveOperationCap ?? 20;

/** A removed row's claim: released at passport once the removal's batches ran. */
interface Removed {
  gtin: string;
  id: string;
}

/**
 * One batch of a removal, run once per key as an effect: its rows are deleted (and, for the first batch of a
 * destructive call, the cap counted) in a transaction of its own. Their claims are released after the removal's
 * last batch, all in one call (releaseRemoved). A batch recorded as a list of GTINs (before the release moved
 * out of the batch) had its claims released within it: such a replay has nothing left to release.
 */
async function removeBatch(
  app: VariantsUnitsApp,
  call: Call,
  t: TenantContext,
  p: PassportView,
  rows: { id: string }[],
  n: number,
  countCap: boolean,
): Promise<{ removed: string[]; release: Removed[] }> {
  const { ctx } = call;
  const out = await once(call, `remove-${n}`, async (_effectKey, run): Promise<Removed[] | string[]> => {
    if (app.failRemovalBatch === n) throw new Error(`removal batch ${n} failed (fault injection)`);
    const cap = capOf(ctx);
    const deleted = await app.store.deleteVariants(
      { run },
      t,
      p.id,
      rows.map((r) => r.id),
      countCap ? cap : undefined,
    );
    if (deleted === "cap_reached") throw capRefusal(cap);
    return deleted.map((r) => ({ gtin: r.gtin, id: r.id }));
  });
  return out.every((r) => typeof r === "string")
    ? { removed: out as string[], release: [] }
    : { removed: (out as Removed[]).map((r) => r.gtin), release: out as Removed[] };
}

/**
 * Releases the claims of the rows a removal deleted (their transactions committed), in one call to passport under
 * the effect `release`: once per key, whatever number of batches deleted them. A process that dies before it
 * leaves claims without their rows, which passport's reconciler releases (decision 0051, "Claims and rows").
 */
async function releaseRemoved(
  app: VariantsUnitsApp,
  call: Call,
  t: TenantContext,
  removed: Removed[],
): Promise<void> {
  if (!removed.length) return;
  const { ctx } = call;
  await once(call, "release", async (effectKey, run) => {
    const releases = removed.map((r) => ({ gtin: r.gtin, ownerId: r.id }));
    await app.passport.releaseGtins(
      { releases },
      { context: effectContext(ctx, t, effectKey, releases), deadlineMs: msLeft(run) },
    );
  });
}

export async function removeVariants(
  app: VariantsUnitsApp,
  call: Call,
  passportId: string,
  gtins: string[],
): Promise<{ removed: string[]; absent: string[] }> {
  const { ctx } = call;
  const t = requireTenant(ctx);
  // The rows are read beside the passport (the tenant's, by the passport's id): the checks below need the passport.
  const [p, found] = await Promise.all([
    readPassport(app, ctx, passportId),
    app.store.variantIdsByGtins(t, passportId, gtins),
  ]);
  if (ctx.credentialKind === "connector") throw connectorRefusal(app, t, p, true);
  checkCategory(p);
  checkEditable(p);
  const present = new Map(found.map((r) => [r.gtin, r]));
  const rows = gtins.flatMap((g) => present.get(g) ?? []);
  const destructive = p.status === "published" || p.status === "deactivated";
  const removed = new Set<string>();
  const release: Removed[] = [];
  let failed: { n: number; err: unknown } | undefined;
  try {
    for (let n = 1, at = 0; at < rows.length; n++, at += app.removalBatch) {
      try {
        const batch = await removeBatch(
          app,
          call,
          t,
          p,
          rows.slice(at, at + app.removalBatch),
          n,
          destructive && n === 1,
        );
        for (const g of batch.removed) removed.add(g);
        release.push(...batch.release);
      } catch (err) {
        failed = { n, err };
        break;
      }
    }
    // The batches that committed have their claims released, whether a later one failed or not.
    await releaseRemoved(app, call, t, release);
  } finally {
    // One wake of the relay for the whole removal, once its claims are released: its events travel in one pass,
    // which does not take the cores from the release and the answer.
    if (rows.length) app.onCommitted();
  }
  if (failed) {
    if (failed.n === 1) throw failed.err;
    const done = gtins.filter((g) => removed.has(g));
    throw recordedFailure(
      new ApiError(
        "internal_error",
        `The removal stopped at batch ${failed.n}: ${done.length} GTINs were removed (details.removed). Retry without an Idempotency-Key to remove the rest; the same key replays this answer.`,
        { reason: "removal_batch_failed", batch: failed.n, removed: done },
      ),
    );
  }
  return { removed: gtins.filter((g) => removed.has(g)), absent: gtins.filter((g) => !removed.has(g)) };
}

export async function deleteVariant(
  app: VariantsUnitsApp,
  call: Call,
  passportId: string,
  variantId: string,
): Promise<void> {
  const { ctx } = call;
  const t = requireTenant(ctx);
  const p = await readPassport(app, ctx, passportId);
  if (ctx.credentialKind === "connector") throw connectorRefusal(app, t, p, true);
  const row = await app.store.variantById(t, p.id, variantId);
  if (!row) throw notFound("variant", variantId);
  checkEditable(p);
  const destructive = p.status === "published" || p.status === "deactivated";
  const gone = await removeBatch(app, call, t, p, [row], 1, destructive);
  if (!gone.removed.length) throw notFound("variant", variantId);
  try {
    await releaseRemoved(app, call, t, gone.release);
  } finally {
    app.onCommitted(); // after the release, as a removal does
  }
}

/** The GTIN of the `gtin` filter, normalised (invalid_request when it is not a GTIN). */
export function gtinFilter(raw: string): string | undefined {
  if (raw === "") return undefined;
  const g = normalizeGtin(raw);
  if (!g)
    throw new ApiError("invalid_request", "gtin is a GTIN of 8, 12, 13 or 14 digits with its check digit.", {
      issues: [{ source: { parameter: "gtin" }, rule: "gtin", message: "Not a valid GTIN." }],
    });
  return g;
}

/** The time left for a call to another service (undefined: the client's default). */
function msLeft(run: { msLeft(): number }): number | undefined {
  const ms = run.msLeft();
  return Number.isFinite(ms) ? ms : undefined;
}
