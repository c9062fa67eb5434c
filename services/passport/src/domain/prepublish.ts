/**
 * Publish conditions owned by other services (required documents still attached and confirmed in storage, unit
 * count within the plan, the variant review fingerprint) go through one interface. Each owning service has an
 * implementation that asks it over gRPC; a deployment without that service has "nothing to check".
 *
 * A check answers the refusal that blocks publishing (document_missing, storage_unavailable, unit_limit_reached,
 * variant_review_required, variant_review_changed ...) or undefined. Checks run inside the publishing
 * transaction, after the row is locked, so they must answer within the call's deadline.
 */
import type { ApiError } from "@dpp/contract";
import type { TenantContext } from "@dpp/kit";

export interface PrePublishSubject {
  id: string;
  category: string;
  status: string;
  version: number;
  gtin: string | null;
  data: Record<string, unknown>;
}

export interface PrePublishInput {
  /** From the publish body; undefined when not sent. */
  variantReviewFingerprint?: string;
}

export interface PrePublishCheck {
  /** The owning service or concern, for logs and the validation record. */
  readonly name: string;
  check(
    tenant: TenantContext,
    passport: PrePublishSubject,
    input: PrePublishInput,
  ): Promise<ApiError | undefined>;
}

/** The default of a concern whose owning service does not exist yet. */
export function nothingToCheck(name: string): PrePublishCheck {
  return { name, check: () => Promise.resolve(undefined) };
}

/** Runs checks in order; the first refusal wins. */
export class CompositePrePublishCheck implements PrePublishCheck {
  readonly name = "composite";
  constructor(private readonly checks: readonly PrePublishCheck[]) {}

  async check(tenant: TenantContext, passport: PrePublishSubject, input: PrePublishInput) {
    for (const c of this.checks) {
      const refusal = await c.check(tenant, passport, input);
      if (refusal) return refusal;
    }
    return undefined;
  }
}

/**
 * The checks the service runs: documents and their storage (the documents service's check when it is configured,
 * app/document-checks.ts), then units and the variant review (the variants-units service's check when it is
 * configured, app/variants-units-checks.ts). An absent service has nothing to check.
 */
export function defaultPrePublishChecks(
  documents?: PrePublishCheck,
  variantsUnits?: PrePublishCheck,
): CompositePrePublishCheck {
  return new CompositePrePublishCheck([
    documents ?? nothingToCheck("documents"),
    ...(variantsUnits ? [variantsUnits] : [nothingToCheck("units"), nothingToCheck("variants")]),
  ]);
}
