import { computeCapabilities, type CapabilityInputs } from "./capabilities";

const inputs = (org: Partial<CapabilityInputs["organization"]> = {}): CapabilityInputs => ({
  organization: {
    id: "org_1",
    name: "Acme",
    plan_id: "pro",
    subscription_status: "active",
    created_at: new Date("2026-01-01T00:00:00Z"),
    affichage_delegation_status: "active",
    affichage_portal_brand_id: "brand-1",
    affichage_delegated_at: new Date("2026-02-01T00:00:00Z"),
    ...org,
  },
  livemode: true,
  publishedCount: 0,
  documentsUsed: 0,
  unitsUsed: 0,
  hasLiveKey: true,
  affichage: { portalConfigured: true, attested: true },
});

const filing = (i: CapabilityInputs) =>
  computeCapabilities(i).find((c) => c.id === "france_affichage_filing")!;

describe("france_affichage_filing", () => {
  it("supports API filing when delegated with a portal brand id, attested, entitled and live", () => {
    const c = filing(inputs());
    expect(c).toMatchObject({ allowed: true, verification_status: "valid", problems: [] });
    expect(c.detail).toMatchObject({
      delegation_status: "active",
      portal_brand_id: "brand-1",
      delegated_at: "2026-02-01T00:00:00.000Z",
      entitlement: "included",
      api_filing_supported: true,
    });
  });

  it("does not when the active delegation has no portal brand id: filing refuses delegation_required", () => {
    const c = filing(inputs({ affichage_portal_brand_id: null }));
    expect(c.detail.api_filing_supported).toBe(false);
    expect(c.problems.map((p) => p.code)).toEqual(["delegation_required"]);
  });

  it("does not without a configured portal, in test mode, or past due", () => {
    expect(
      filing({ ...inputs(), affichage: { portalConfigured: false, attested: true } }).detail,
    ).toMatchObject({
      api_filing_supported: false,
    });
    expect(filing({ ...inputs(), livemode: false }).detail.api_filing_supported).toBe(false);
    const pastDue = filing(inputs({ subscription_status: "past_due" }));
    expect(pastDue.detail).toMatchObject({ entitlement: "unavailable", api_filing_supported: false });
  });

  it("names the free offer when the plan does not include filing", () => {
    const c = filing(inputs({ plan_id: "trial", subscription_status: "trialing" }));
    expect(c.detail).toMatchObject({ entitlement: "free_offer", free_filing_reason: "plan_without_filing" });
  });
});
