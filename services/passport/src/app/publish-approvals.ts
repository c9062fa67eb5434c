/** The publish approvals a connector's publish records (lifecycle.ts), as a person or an integrator reads them. */
import { ApiError } from "@dpp/contract";
import { requireTenant, type RequestContext } from "@dpp/kit";
import type { PassportApp } from "./deps";

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
}

/** Where a person reviews an approval (the same URL the 202 human_approval_required names). */
export function approvalReviewUrl(
  app: { reviewBaseUrl: string },
  organizationId: string,
  id: string,
): string {
  return `${app.reviewBaseUrl}/organizations/${encodeURIComponent(organizationId)}/publish-approvals/${id}`;
}

export async function getPublishApproval(
  app: PassportApp,
  ctx: RequestContext,
  id: string,
): Promise<PublishApprovalView> {
  const t = requireTenant(ctx);
  const row = id.length <= 255 ? await app.store.getPublishApproval(t, id) : undefined;
  if (!row)
    throw new ApiError("resource_not_found", `No publish approval ${id}.`, { publish_approval_id: id });
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
  };
}
