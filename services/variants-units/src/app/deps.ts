/** What the use cases of the service are given. */
import { ApiError } from "@dpp/contract";
import type { ClientOf, RequestContext, TenantContext } from "@dpp/kit";
import { passportV1, type documentsV1 } from "@dpp/proto";
import type { VariantsUnitsStore } from "../store/store";

export type PassportClient = ClientOf<typeof passportV1.PassportService>;
export type DocumentsClient = ClientOf<typeof documentsV1.DocumentsService>;

export interface VariantsUnitsApp {
  store: VariantsUnitsStore;
  passport: PassportClient;
  /** The documents service, where a reading that cites a document registers it (absent: none can be cited). */
  documents?: DocumentsClient;
  reviewBaseUrl: string;
  removalBatch: number;
  /** Test fault injection: the removal batch (1-based) that fails; 0 for none. */
  failRemovalBatch: number;
  onCommitted: () => void;
}

export interface PassportView {
  id: string;
  category: string;
  status: string;
  gtin: string | null;
}

const STATUS_NAMES: Record<number, string> = {
  [passportV1.PassportStatus.DRAFT]: "draft",
  [passportV1.PassportStatus.PUBLISHED]: "published",
  [passportV1.PassportStatus.DEACTIVATED]: "deactivated",
  [passportV1.PassportStatus.TRASHED]: "trashed",
  [passportV1.PassportStatus.READONLY]: "readonly",
};

/** The call's context for a read of another service: without the call's Idempotency-Key (a read is not the write). */
export function readContext(ctx: RequestContext): RequestContext {
  const { idempotency: _key, outcome: _o, ...read } = ctx;
  return read;
}

/** The passport, read from its owner as the caller: resource_not_found for another tenant's or none. */
export async function readPassport(
  app: VariantsUnitsApp,
  ctx: RequestContext,
  id: string,
): Promise<PassportView> {
  const res = await app.passport.getPassport({ id }, { context: readContext(ctx) });
  const p = res.passport!;
  return {
    id: p.id,
    category: p.category,
    status: STATUS_NAMES[p.status] ?? "unknown",
    gtin: p.gtin ?? null,
  };
}

export const passportPath = (t: TenantContext, id: string) =>
  `organizations/${t.organizationId}/passports/${id}`;

export function reviewUrl(app: VariantsUnitsApp, t: TenantContext, passportId: string): string {
  return `${app.reviewBaseUrl}/organizations/${encodeURIComponent(t.organizationId)}/passports/${encodeURIComponent(passportId)}/variants/review`;
}

export function notFound(kind: string, id: string): ApiError {
  return new ApiError("resource_not_found", `No ${kind} ${id} on this passport.`, { id });
}
