/**
 * The publish approvals a connector's publish records (lifecycle.ts), as a person or an integrator reads them,
 * and a person's decision on the review page (docs/decisions/0057): approving publishes with the same checks as
 * a direct publish, in the same transaction that records who approved; rejecting publishes nothing.
 */
import { ApiError, domainEvent, type PublishApprovalRelated } from "@dpp/contract";
import { requireTenant, type RequestContext } from "@dpp/kit";
import type { PassportRow, PublishApprovalRow } from "../store";
import type { PassportApp } from "./deps";
import { applyPublish } from "./lifecycle";
import { lockPassport } from "./passport-access";
import { publishBlockers, publishWarnings, type Warning } from "./publish-conditions";
import { approvalReviewUrl, checkVersion } from "./refusals";

export { approvalReviewUrl };

export interface PublishApprovalView {
  id: string;
  organizationId: string;
  livemode: boolean;
  passportId: string;
  passportVersion: number;
  state: string;
  requestedByKeyId: string | null;
  variantReviewFingerprint: string | null;
  requestedAt: Date;
  reviewUrl: string;
  decidedAt: Date | null;
  decidedBy: string | null;
}

function toView(app: PassportApp, row: PublishApprovalRow): PublishApprovalView {
  return {
    id: row.id,
    organizationId: row.organization_id,
    livemode: row.livemode,
    passportId: row.passport_id,
    passportVersion: row.passport_version,
    state: row.state,
    requestedByKeyId: row.requested_by_key_id,
    variantReviewFingerprint: row.variant_review_fingerprint,
    requestedAt: row.created_at,
    reviewUrl: approvalReviewUrl(app, row.organization_id, row.id),
    decidedAt: row.decided_at,
    decidedBy: row.decided_by,
  };
}

const notFound = (id: string) =>
  new ApiError("resource_not_found", `No publish approval ${id}.`, { publish_approval_id: id });

export async function getPublishApproval(
  app: PassportApp,
  ctx: RequestContext,
  id: string,
): Promise<PublishApprovalView> {
  const t = requireTenant(ctx);
  const row = id.length <= 255 ? await app.store.getPublishApproval(t, id) : undefined;
  if (!row) throw notFound(id);
  return toView(app, row);
}

export interface DecidePublishApprovalInput {
  id: string;
  approve: boolean;
  /** Who decided (the review page's `person:<id>`). */
  decidedBy: string;
  /** The passport version the person reviewed: precondition_failed when it moved since. */
  expectedVersion?: number;
}

function related(row: PublishApprovalRow): PublishApprovalRelated {
  return {
    object: "publish_approval",
    id: row.id,
    name: `organizations/${row.organization_id}/publish-approvals/${row.id}`,
    passport_id: row.passport_id,
    state: row.state,
  };
}

export async function decidePublishApproval(
  app: PassportApp,
  ctx: RequestContext,
  input: DecidePublishApprovalInput,
): Promise<{ approval: PublishApprovalView; passport: PassportRow; warnings: Warning[] }> {
  if (ctx.credentialKind !== "person")
    throw new ApiError(
      "insufficient_scope",
      "Only a person of the organization decides, on the review page.",
      {
        credential_kind: ctx.credentialKind ?? null,
      },
    );
  const t = requireTenant(ctx);
  const { id } = input;
  const out = await app.store.transaction(t, async (tx) => {
    const row = id.length <= 255 ? await tx.lockPublishApproval(t, id) : undefined;
    if (!row) throw notFound(id);
    if (row.state !== "pending")
      throw new ApiError("wrong_status", `The publish approval is ${row.state} already.`, {
        publish_approval_id: id,
        state: row.state,
      });
    let passport = await lockPassport(tx, t, row.passport_id);
    checkVersion(passport, input.expectedVersion);
    if (input.approve) {
      const body = { variantReviewFingerprint: row.variant_review_fingerprint ?? undefined };
      const blockers = await publishBlockers(app, tx, ctx, t, passport, body, true);
      if (blockers[0]) throw blockers[0].error;
      passport = await applyPublish(tx, ctx, t, passport, input.expectedVersion);
    }
    const decided = await tx.decidePublishApproval(
      t,
      id,
      input.approve ? "approved" : "rejected",
      input.decidedBy,
    );
    await tx.appendEvent(
      domainEvent(
        input.approve ? "publish_approval.approved" : "publish_approval.rejected",
        t,
        related(decided),
      ),
    );
    return { row: decided, passport };
  });
  app.onCommitted();
  return {
    approval: toView(app, out.row),
    passport: out.passport,
    warnings: input.approve ? publishWarnings(app, out.passport) : [],
  };
}

/** The review page's list: the tenant's pending publish approvals, newest first. */
export async function listPendingPublishApprovals(
  app: PassportApp,
  ctx: RequestContext,
): Promise<PublishApprovalView[]> {
  const t = requireTenant(ctx);
  return (await app.store.listPendingPublishApprovals(t, 100)).map((r) => toView(app, r));
}
