/**
 * The lifecycle writes (state machine in src/domain/lifecycle.ts): publish, and the transitions unpublish,
 * trash, restore (API) and deactivate, reactivate, lock, unlock (platform operations). Each is one transaction:
 * lock the row, check Expected-Version, apply the rules, write with `WHERE version = <read>` and record the
 * event; a refusal rolls everything back.
 */
import { ApiError, newId } from "@dpp/contract";
import { requireTenant, type RequestContext, type TenantContext } from "@dpp/kit";
import type { PassportRow, PassportTx } from "../store";
import { TRANSITIONS, transitionRefusal, type TransitionName } from "../domain/lifecycle";
import { liveWriteRefusal } from "../domain/plan-rules";
import type { PassportApp } from "./deps";
import { claimLeadGtin } from "./gtin-claims";
import { lockPassport, writeVersioned } from "./passport-access";
import { assertPublishSlotTaken, publishBlockers, publishWarnings, type Warning } from "./publish-conditions";
import { approvalReviewUrl, checkVersion, passportReviewUrl, throwIf } from "./refusals";

export type TransitionInput = {
  id: string;
  transition: Exclude<TransitionName, "publish">;
  expectedVersion?: number;
};

export interface PublishInput {
  id: string;
  /** From the optional body: the reviewed variants' fingerprint (syntax checked by the gateway). */
  variantReviewFingerprint?: string;
  expectedVersion?: number;
}

/** What a publish did: published, or (asked by a connector) recorded an approval a person must give. */
export type PublishOutcome =
  | { kind: "published"; row: PassportRow; warnings: Warning[] }
  | { kind: "approval_required"; passportId: string; approvalId: string; reviewUrl: string };

/** API transitions are live writes subject to the plan; platform operations are not (they may be the plan's doing). */
export async function transitionPassport(
  app: PassportApp,
  ctx: RequestContext,
  input: TransitionInput,
): Promise<PassportRow> {
  const { id, transition: name, expectedVersion } = input;
  const t = requireTenant(ctx);
  const rule = TRANSITIONS[name];
  if (rule.api) throwIf(liveWriteRefusal(ctx));
  const row = await app.store.transaction(t, async (tx) => {
    const current = await lockPassport(tx, t, id);
    checkVersion(current, expectedVersion);
    throwIf(transitionRefusal(name, current.status, id));
    if (name === "unpublish" && ctx.credentialKind === "connector")
      throw new ApiError(
        "connector_writes_drafts_only",
        "A connector cannot take a passport offline; a person can unpublish it.",
        { passport_id: id, status: current.status, review_url: passportReviewUrl(app, t, id) },
      );
    return writeVersioned(
      tx,
      t,
      current,
      { status: rule.to, trashed_at: rule.to === "trashed" ? "now" : null },
      rule.event,
      expectedVersion,
    );
  });
  app.onCommitted();
  return row;
}

/**
 * Publishes when every condition holds. A connector's publish records a publish approval instead (committed)
 * and answers that a person must approve it: nothing is published.
 */
export async function publishPassport(
  app: PassportApp,
  ctx: RequestContext,
  input: PublishInput,
): Promise<PublishOutcome> {
  const { id, expectedVersion } = input;
  const body = { variantReviewFingerprint: input.variantReviewFingerprint };
  const t = requireTenant(ctx);
  const outcome = await app.store.transaction(t, async (tx) => {
    const current = await lockPassport(tx, t, id);
    checkVersion(current, expectedVersion);
    const blockers = await publishBlockers(app, tx, ctx, t, current, body, true);
    if (blockers[0]) throw blockers[0].error;
    if (ctx.credentialKind === "connector") {
      const approvalId = newId("pa");
      await tx.insertPublishApproval(t, {
        id: approvalId,
        passport_id: id,
        passport_version: current.version,
        requested_by_key_id: ctx.keyId ?? null,
        variant_review_fingerprint: body.variantReviewFingerprint ?? null,
      });
      return { kind: "approval", approvalId } as const;
    }
    const updated = await applyPublish(tx, ctx, t, current, expectedVersion);
    return { kind: "published", row: updated } as const;
  });
  if (outcome.kind === "approval") {
    const reviewUrl = approvalReviewUrl(app, t.organizationId, outcome.approvalId);
    return { kind: "approval_required", passportId: id, approvalId: outcome.approvalId, reviewUrl };
  }
  app.onCommitted();
  return { kind: "published", row: outcome.row, warnings: publishWarnings(app, outcome.row) };
}

/** The publish itself, once every blocker is cleared: the lead GTIN claimed, the status moved, a slot taken. */
export async function applyPublish(
  tx: PassportTx,
  ctx: RequestContext,
  t: TenantContext,
  current: PassportRow,
  expectedVersion: number | undefined,
): Promise<PassportRow> {
  if (current.gtin) await claimLeadGtin(tx, t, current.gtin, current.id);
  const updated = await writeVersioned(
    tx,
    t,
    current,
    { status: "published", published_at: "now" },
    "passport.published",
    expectedVersion,
  );
  await assertPublishSlotTaken(tx, ctx, t);
  return updated;
}
