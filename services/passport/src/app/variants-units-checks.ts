/**
 * The publish conditions the variants-units service owns, asked in one GetPublishFacts call (signed with this
 * service's own key, the tenant forwarded): the passport's units within the plan's unit limit (else 402
 * unit_limit_reached: a plan changed to a smaller one leaves a battery passport with more units than it allows),
 * and, when assistant-written variants exist, the current review fingerprint in the publish body (else 409
 * variant_review_required, or variant_review_changed when the rows changed since the fingerprint sent). The units
 * are checked first: a passport over its plan cannot publish whatever its review says.
 *
 * The facts come from variants-units' own tables (it calls nothing while passport holds the row lock). A
 * variants-units service that does not answer refuses the publish with its 5xx: nothing is published.
 */
import { ApiError } from "@dpp/contract";
import type { ClientOf, TenantContext } from "@dpp/kit";
import type { variantsUnitsV1 } from "@dpp/proto";
import type { PrePublishCheck, PrePublishInput, PrePublishSubject } from "../domain/prepublish";

export type VariantsUnitsClient = ClientOf<typeof variantsUnitsV1.VariantsUnitsService>;

export interface PublishFacts {
  variantFingerprint: string;
  agentWrittenCount: number;
  unitCount: number;
  reviewUrl: string;
}

/** The refusal the facts give for this publish, or undefined. Pure. */
export function publishFactsRefusal(
  facts: PublishFacts,
  unitLimit: number | undefined,
  passport: Pick<PrePublishSubject, "id">,
  input: PrePublishInput,
): ApiError | undefined {
  if (unitLimit !== undefined && facts.unitCount > unitLimit)
    return new ApiError(
      "unit_limit_reached",
      `The passport carries ${facts.unitCount} units and the plan allows ${unitLimit} per passport; remove units or change plan.`,
      { passport_id: passport.id, limit: unitLimit, current: facts.unitCount },
    );
  if (facts.agentWrittenCount === 0) return undefined;
  const sent = input.variantReviewFingerprint;
  if (sent === undefined)
    return new ApiError(
      "variant_review_required",
      `${facts.agentWrittenCount} variant${facts.agentWrittenCount === 1 ? " was" : "s were"} written by a connector: a person reviews them (GET .../variants/review) and publishing sends that review's fingerprint as variant_review_fingerprint.`,
      {
        passport_id: passport.id,
        agent_written_count: facts.agentWrittenCount,
        review_url: facts.reviewUrl,
      },
    );
  if (sent !== facts.variantFingerprint)
    return new ApiError(
      "variant_review_changed",
      "The variants changed after the review whose fingerprint was sent; review them again and send the new fingerprint.",
      {
        passport_id: passport.id,
        agent_written_count: facts.agentWrittenCount,
        review_url: facts.reviewUrl,
      },
    );
  return undefined;
}

/** The units and variant-review check of publish, asking variants-units over gRPC. */
export function variantsUnitsPrePublishCheck(client: VariantsUnitsClient): PrePublishCheck {
  return {
    name: "variants-units",
    async check(tenant: TenantContext, passport: PrePublishSubject, input: PrePublishInput) {
      // A read: the publish's own Idempotency-Key is not the callee's.
      const { idempotency: _k, outcome: _o, ...context } = tenant;
      const facts = await client.getPublishFacts({ passportId: passport.id }, { context });
      return publishFactsRefusal(facts, tenant.plan?.unitLimit, passport, input);
    },
  };
}
