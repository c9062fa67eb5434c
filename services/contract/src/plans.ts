/**
 * The plan catalogue: what each plan entitles an organization to. The gateway
 * resolves an organization's plan once per request and passes the entitlements
 * in the request context, so services never look plans up themselves.
 */
export const PLAN_IDS = ["trial", "starter", "pro", "scale"] as const;
export type PlanId = (typeof PLAN_IDS)[number];

export const SUBSCRIPTION_STATUSES = ["trialing", "active", "past_due", "canceled"] as const;
export type SubscriptionStatus = (typeof SUBSCRIPTION_STATUSES)[number];

export interface PlanLimits {
  /** Passports that may be published at once (live mode). */
  publishLimit: number;
  /** Serialized units per battery passport. */
  unitLimit: number;
  /** Documents in the organization's library. */
  documentLimit: number;
  /**
   * Calls per UTC day, per organization and mode, that actually remove variants from a published or deactivated
   * passport (POST variants/remove, DELETE variants/{id}); beyond it 429 rate_limited with details.reason
   * `destructive_operation_cap` (docs/decisions/0051-variants-and-units.md).
   */
  destructiveOperationCap: number;
  /** Whether the plan is paid (a trial is not). */
  paid: boolean;
}

export const PLAN_LIMITS: Record<PlanId, PlanLimits> = {
  trial: { publishLimit: 3, unitLimit: 100, documentLimit: 20, destructiveOperationCap: 20, paid: false },
  starter: {
    publishLimit: 50,
    unitLimit: 1000,
    documentLimit: 200,
    destructiveOperationCap: 100,
    paid: true,
  },
  pro: {
    publishLimit: 1000,
    unitLimit: 100000,
    documentLimit: 5000,
    destructiveOperationCap: 1000,
    paid: true,
  },
  scale: {
    publishLimit: 100000,
    unitLimit: 10000000,
    documentLimit: 100000,
    destructiveOperationCap: 10000,
    paid: true,
  },
};

export function isPlanId(s: string): s is PlanId {
  return (PLAN_IDS as readonly string[]).includes(s);
}

export function isSubscriptionStatus(s: string): s is SubscriptionStatus {
  return (SUBSCRIPTION_STATUSES as readonly string[]).includes(s);
}

export function planLimits(planId: string): PlanLimits {
  return isPlanId(planId) ? PLAN_LIMITS[planId] : PLAN_LIMITS.trial;
}
