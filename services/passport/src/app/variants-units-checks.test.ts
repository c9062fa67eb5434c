import type { TenantContext } from "@dpp/kit";
import {
  publishFactsRefusal,
  variantsUnitsPrePublishCheck,
  type PublishFacts,
  type VariantsUnitsClient,
} from "./variants-units-checks";

const passport = { id: "pp_1" };
const fp = "a".repeat(64);
const facts = (f: Partial<PublishFacts> = {}): PublishFacts => ({
  variantFingerprint: fp,
  agentWrittenCount: 0,
  unitCount: 0,
  reviewUrl: "https://app.example/organizations/org_1/passports/pp_1/variants/review",
  ...f,
});

describe("the variants-units publish check", () => {
  it("passes without assistant-written variants and with units within the plan", () => {
    expect(publishFactsRefusal(facts({ unitCount: 100 }), 100, passport, {})).toBeUndefined();
    expect(publishFactsRefusal(facts({ unitCount: 5 }), undefined, passport, {})).toBeUndefined();
  });

  it("refuses more units than the plan allows per passport", () => {
    const err = publishFactsRefusal(facts({ unitCount: 101 }), 100, passport, {});
    expect([err?.code, err?.details]).toEqual([
      "unit_limit_reached",
      { passport_id: "pp_1", limit: 100, current: 101 },
    ]);
  });

  it("needs the current fingerprint when assistant-written variants exist", () => {
    const f = facts({ agentWrittenCount: 2 });
    const required = publishFactsRefusal(f, 100, passport, {});
    expect([required?.code, required?.details]).toEqual([
      "variant_review_required",
      { passport_id: "pp_1", agent_written_count: 2, review_url: f.reviewUrl },
    ]);
    const changed = publishFactsRefusal(f, 100, passport, { variantReviewFingerprint: "b".repeat(64) });
    expect([changed?.code, changed?.details]).toEqual([
      "variant_review_changed",
      { passport_id: "pp_1", agent_written_count: 2, review_url: f.reviewUrl },
    ]);
    expect(publishFactsRefusal(f, 100, passport, { variantReviewFingerprint: fp })).toBeUndefined();
  });

  it("reports the units before the review", () => {
    const err = publishFactsRefusal(facts({ unitCount: 2, agentWrittenCount: 1 }), 1, passport, {});
    expect(err?.code).toBe("unit_limit_reached");
  });

  it("asks variants-units with the tenant but without the publish's Idempotency-Key, and reads the plan's limit", async () => {
    const asked: unknown[] = [];
    const client = {
      getPublishFacts: (req: unknown, opts: unknown) => {
        asked.push([req, opts]);
        return Promise.resolve(facts({ unitCount: 3 }));
      },
    } as unknown as VariantsUnitsClient;
    const tenant: TenantContext = {
      requestId: "r",
      organizationId: "org_1",
      livemode: true,
      plan: { planId: "trial", subscriptionStatus: "trialing", unitLimit: 2 },
      idempotency: { key: "k", fingerprint: "f", callerOrganizationId: "org_1" },
    } as TenantContext;
    const err = await variantsUnitsPrePublishCheck(client).check(
      tenant,
      { id: "pp_1", category: "battery", status: "draft", version: 1, gtin: null, data: {} },
      {},
    );
    expect(err?.code).toBe("unit_limit_reached");
    expect(asked).toEqual([
      [
        { passportId: "pp_1" },
        {
          context: {
            requestId: "r",
            organizationId: "org_1",
            livemode: true,
            plan: { planId: "trial", subscriptionStatus: "trialing", unitLimit: 2 },
          },
        },
      ],
    ]);
  });
});
