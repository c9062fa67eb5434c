import type { RequestContext } from "@dpp/kit";
import { liveWriteRefusal } from "./plan-rules";

const ctx = (livemode: boolean, planId?: string, subscriptionStatus?: string): RequestContext => ({
  requestId: "req_1",
  organizationId: "org_1",
  livemode,
  ...(planId ? { plan: { planId, subscriptionStatus: subscriptionStatus! } } : {}),
});

describe("liveWriteRefusal", () => {
  it.each([
    ["trial", "trialing", "no_subscription"],
    ["pro", "trialing", "no_subscription"],
    ["pro", "past_due", "payment_overdue"],
    ["starter", "canceled", "no_subscription"],
    ["trial", "active", "plan_required"],
  ])("refuses a live write on %s/%s with %s", (plan, status, code) => {
    const err = liveWriteRefusal(ctx(true, plan, status));
    expect(err?.code).toBe(code);
    expect(err?.status).toBe(402);
    expect(err?.details).toEqual({ plan_id: plan, subscription_status: status, livemode: true });
  });

  it("allows a live write on an active paid plan", () => {
    expect(liveWriteRefusal(ctx(true, "pro", "active"))).toBeUndefined();
    expect(liveWriteRefusal(ctx(true, "starter", "active"))).toBeUndefined();
  });

  it("never refuses test mode, nor a call without plan context", () => {
    expect(liveWriteRefusal(ctx(false, "trial", "trialing"))).toBeUndefined();
    expect(liveWriteRefusal(ctx(false, "pro", "past_due"))).toBeUndefined();
    expect(liveWriteRefusal(ctx(true))).toBeUndefined();
  });
});
