/** The refusals several use cases share, with the spec's codes, messages and details. */
import { ApiError } from "@dpp/contract";
import { type TenantContext } from "@dpp/kit";
import type { ClaimHolder } from "../store";

export const passportName = (t: TenantContext, id: string) =>
  `organizations/${t.organizationId}/passports/${id}`;

/** Where a person makes a change a connector may not make. */
export function passportReviewUrl(o: { reviewBaseUrl: string }, t: TenantContext, id: string): string {
  return `${o.reviewBaseUrl}/organizations/${encodeURIComponent(t.organizationId)}/passports/${encodeURIComponent(id)}`;
}

/** Where a person reviews an approval (the same URL the 202 human_approval_required names). */
export function approvalReviewUrl(
  app: { reviewBaseUrl: string },
  organizationId: string,
  id: string,
): string {
  return `${app.reviewBaseUrl}/organizations/${encodeURIComponent(organizationId)}/publish-approvals/${id}`;
}

export function throwIf(err: ApiError | undefined): void {
  if (err) throw err;
}

export function notFound(id: string): ApiError {
  return new ApiError("resource_not_found", `No passport ${id}.`, { passport_id: id });
}

export function preconditionFailed(current: number, expected: number | undefined): ApiError {
  return new ApiError(
    "precondition_failed",
    `The passport changed since version ${expected ?? "read"}; it is at version ${current}. Read it again and retry with a new Idempotency-Key.`,
    { current_version: current, expected_version: expected ?? null },
  );
}

/** Expected-Version against the row read (and locked) in the writing transaction. */
export function checkVersion(row: { version: number }, expected: number | undefined): void {
  if (expected !== undefined && row.version !== expected) throw preconditionFailed(row.version, expected);
}

/** gtin_in_use naming the holding passport, its product_name and the role of the claim. */
export function gtinInUse(
  t: TenantContext,
  gtin: string,
  holder: ClaimHolder | undefined,
  pointer: string,
): ApiError {
  return new ApiError("gtin_in_use", `GTIN ${gtin} belongs to another passport.`, {
    gtin,
    passport: holder ? passportName(t, holder.passport_id) : null,
    passport_id: holder?.passport_id ?? null,
    product_name: holder?.product_name ?? null,
    role: holder?.role ?? null,
    issues: [{ source: { pointer }, rule: "gtin_in_use" }],
  });
}
