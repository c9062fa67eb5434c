/**
 * GET .../capabilities (docs/decisions/0010 §capabilities): what the
 * organization in the path can do in the calling key's mode, computed from its
 * plan (kit plans.ts) and the counts the owning services report over gRPC.
 * Pure: the handler gathers the inputs.
 */
import { planLimits } from "@dpp/contract";
import type { OrganizationRecord } from "./identity.repository";

export const CAPABILITY_IDS = [
  "passport_publishing",
  "france_affichage_filing",
  "document_upload",
  "live_api_writes",
] as const;
export type CapabilityId = (typeof CAPABILITY_IDS)[number];

/** Version of the attestation wording a person at the brand accepts before filing. */
export const ATTESTATION_WORDING_VERSION = "2026-01";

export interface CapabilityInputs {
  organization: OrganizationRecord;
  livemode: boolean;
  /** Passports occupying a publish slot in this mode (passport service GetUsage). */
  publishedCount: number;
  /** Documents in the organization's library in this mode (documents service GetUsage). */
  documentsUsed: number;
  /** Units of the organization's battery passports in this mode (variants-units service GetUnitUsage). */
  unitsUsed: number;
  /** Whether the organization holds a usable live key (it asked for live access). */
  hasLiveKey: boolean;
  /**
   * The filings service's settings: a portal is configured, and a person at the brand accepted the
   * attestation in this mode. Absent: treated as neither.
   */
  affichage?: { portalConfigured: boolean; attested: boolean };
}

export interface RemediatingAction {
  code: string;
  message: string;
}
export interface Problem {
  code: string;
  message: string;
  type: "pending" | "invalid";
  remediating_actions: RemediatingAction[];
}

export interface Capability {
  object: "capability";
  id: CapabilityId;
  name: string;
  organization_id: string;
  livemode: boolean;
  requested: boolean;
  allowed: boolean;
  verification_status: "valid" | "pending" | "invalid";
  problems: Problem[];
  detail: Record<string, unknown>;
}

/** Problems of the subscription itself, shared by every capability that needs a paid, paying plan. */
function subscriptionProblems(org: OrganizationRecord, requirePaid: boolean): Problem[] {
  const limits = planLimits(org.plan_id);
  switch (org.subscription_status) {
    case "past_due":
      return [
        {
          code: "payment_overdue",
          message: "The organization's payment is overdue.",
          type: "invalid",
          remediating_actions: [
            { code: "update_payment_method", message: "Update the payment method and settle the invoice." },
          ],
        },
      ];
    case "canceled":
      return [
        {
          code: "no_subscription",
          message: "The organization's subscription was cancelled.",
          type: "invalid",
          remediating_actions: [{ code: "subscribe", message: "Subscribe to a paid plan." }],
        },
      ];
    default:
      if (requirePaid && (!limits.paid || org.subscription_status !== "active"))
        return [
          {
            code: "no_subscription",
            message: "This needs a paid plan with an active subscription; a trial does not count.",
            type: "invalid",
            remediating_actions: [{ code: "subscribe", message: "Subscribe to a paid plan." }],
          },
        ];
      return [];
  }
}

function status(problems: Problem[]): Capability["verification_status"] {
  if (problems.some((p) => p.type === "invalid")) return "invalid";
  if (problems.length) return "pending";
  return "valid";
}

export function computeCapabilities(i: CapabilityInputs): Capability[] {
  const org = i.organization;
  const limits = planLimits(org.plan_id);
  const base = (id: CapabilityId) => ({
    object: "capability" as const,
    id,
    name: `organizations/${org.id}/capabilities/${id}`,
    organization_id: org.id,
    livemode: i.livemode,
  });
  const out: Capability[] = [];

  // passport_publishing
  {
    const problems = subscriptionProblems(org, false);
    if (i.publishedCount >= limits.publishLimit)
      problems.push({
        code: "publish_limit_reached",
        message: `All ${limits.publishLimit} publish slots of the plan are used.`,
        type: "invalid",
        remediating_actions: [
          { code: "upgrade_plan", message: "Move to a plan with more publish slots." },
          { code: "unpublish_passports", message: "Unpublish passports that no longer need to be online." },
        ],
      });
    out.push({
      ...base("passport_publishing"),
      requested: true,
      allowed: problems.length === 0,
      verification_status: status(problems),
      problems,
      detail: {
        plan_id: org.plan_id,
        subscription_status: org.subscription_status,
        publish_limit: limits.publishLimit,
        published_count: i.publishedCount,
        unit_limit: limits.unitLimit,
        units_used: i.unitsUsed,
        per_passport_check: `/v1/organizations/${org.id}/passports/{id}/validate`,
      },
    });
  }

  // france_affichage_filing
  {
    const delegation = org.affichage_delegation_status;
    const included = limits.paid && org.subscription_status === "active";
    const entitlement = subscriptionProblems(org, false).length
      ? "unavailable"
      : included
        ? "included"
        : "free_offer";
    const problems: Problem[] = [];
    if (!i.livemode)
      problems.push({
        code: "test_mode_refused",
        message: "Filings are made with live credentials only; test mode never reaches the portal.",
        type: "invalid",
        remediating_actions: [{ code: "use_live_key", message: "Call with a live key." }],
      });
    if (delegation === "none" || delegation === "revoked")
      problems.push({
        code: "delegation_required",
        message: "Filing needs an active delegation from the brand to the platform on the affichage portal.",
        type: "invalid",
        remediating_actions: [
          { code: "request_delegation", message: "Request the delegation on the affichage portal." },
        ],
      });
    else if (delegation === "active" && !org.affichage_portal_brand_id)
      // Filing names the brand to the portal: without its portal brand id the delegation cannot be used.
      problems.push({
        code: "delegation_required",
        message:
          "The delegation is recorded without the brand's id on the affichage portal; filing cannot name it.",
        type: "invalid",
        remediating_actions: [
          { code: "request_delegation", message: "Record the delegation with the brand's portal id." },
        ],
      });
    else if (delegation === "pending")
      problems.push({
        code: "delegation_pending",
        message: "The delegation was requested and awaits confirmation on the affichage portal.",
        type: "pending",
        remediating_actions: [
          { code: "confirm_delegation", message: "Confirm the delegation on the affichage portal." },
        ],
      });
    if (entitlement === "unavailable") problems.push(...subscriptionProblems(org, false));
    const affichage = i.affichage ?? { portalConfigured: false, attested: false };
    if (!affichage.attested)
      problems.push({
        code: "attestation_required",
        message: "A named person at the brand must accept the filing attestation first.",
        type: "invalid",
        remediating_actions: [
          {
            code: "accept_attestation",
            message: `Have a person at the brand accept attestation wording ${ATTESTATION_WORDING_VERSION}.`,
          },
        ],
      });
    if (!affichage.portalConfigured)
      problems.push({
        code: "portal_unavailable",
        message: "The platform cannot reach an affichage portal now.",
        type: "invalid",
        remediating_actions: [{ code: "contact_support", message: "Contact the platform's support." }],
      });
    out.push({
      ...base("france_affichage_filing"),
      requested: delegation !== "none",
      allowed: problems.length === 0,
      verification_status: status(problems),
      problems,
      detail: {
        delegation_status: delegation,
        portal_brand_id: org.affichage_portal_brand_id,
        delegated_at: org.affichage_delegated_at?.toISOString() ?? null,
        entitlement,
        free_filing_reason: entitlement === "free_offer" ? "plan_without_filing" : null,
        per_passport_requirements: affichage.attested
          ? ["gtin_required"]
          : ["gtin_required", "attestation_required"],
        attestation_wording_version: ATTESTATION_WORDING_VERSION,
        per_passport_check: `/v1/organizations/${org.id}/passports/{id}/affichage`,
        // Filing through the API works end to end: a portal is configured and every condition above holds.
        api_filing_supported: affichage.portalConfigured && problems.length === 0,
        api_filing_scope: "filings:write",
      },
    });
  }

  // document_upload
  {
    const problems = subscriptionProblems(org, false);
    if (i.documentsUsed >= limits.documentLimit)
      problems.push({
        code: "document_limit_reached",
        message: `All ${limits.documentLimit} documents of the plan are used.`,
        type: "invalid",
        remediating_actions: [{ code: "upgrade_plan", message: "Move to a plan with more documents." }],
      });
    out.push({
      ...base("document_upload"),
      requested: true,
      allowed: problems.length === 0,
      verification_status: status(problems),
      problems,
      detail: { document_limit: limits.documentLimit, documents_used: i.documentsUsed },
    });
  }

  // live_api_writes
  {
    const problems = subscriptionProblems(org, true);
    out.push({
      ...base("live_api_writes"),
      requested: i.hasLiveKey,
      allowed: problems.length === 0,
      verification_status: status(problems),
      problems,
      detail: { subscription_status: org.subscription_status, plan_id: org.plan_id },
    });
  }
  return out;
}
