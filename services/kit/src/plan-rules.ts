/**
 * Plan refusals of live-mode writes (docs/decisions/0009-passport-lifecycle.md), from the plan entitlements the
 * gateway puts in the request context. Test mode is never refused for the plan: integrators build on a trial.
 *
 * - subscription past_due → payment_overdue
 * - subscription trialing, canceled, or any other status that is not active → no_subscription
 * - subscription active on a plan that is not paid (the trial plan) → plan_required
 *
 * Shared by every service whose writes create passports (passport, imports).
 *
 * A call without plan context (an internal caller, not the gateway) is not refused here.
 */
import { ApiError, planLimits } from "@dpp/contract";
import type { PlanContext, RequestContext } from "./context";

export function liveWriteRefusal(ctx: RequestContext): ApiError | undefined {
  if (ctx.livemode !== true || !ctx.plan) return undefined;
  const plan: PlanContext = ctx.plan;
  const details = { plan_id: plan.planId, subscription_status: plan.subscriptionStatus, livemode: true };
  if (plan.subscriptionStatus === "past_due")
    return new ApiError(
      "payment_overdue",
      "The organization's payment is overdue; live writes resume once it is settled.",
      details,
    );
  if (plan.subscriptionStatus !== "active")
    return new ApiError(
      "no_subscription",
      plan.subscriptionStatus === "trialing"
        ? "Live writes need a paid subscription; the organization is on a trial. Test mode stays available."
        : "Live writes need an active subscription. Test mode stays available.",
      details,
    );
  if (!planLimits(plan.planId).paid)
    return new ApiError("plan_required", `The ${plan.planId} plan does not allow live writes.`, details);
  return undefined;
}

export function assertLiveWriteAllowed(ctx: RequestContext): void {
  const refusal = liveWriteRefusal(ctx);
  if (refusal) throw refusal;
}
