import { blockersOf, declarationOf, entitlementOf, portalGtin, sameDeclaration } from "./affichage";
import { simulatedScore } from "../portal/simulated-score";

describe("portalGtin", () => {
  it("converts a GTIN-14 with indicator 0 to its GTIN-13, a padded GTIN-8 to 8 digits, and refuses the rest", () => {
    expect(portalGtin("04006381333931")).toEqual({ gtin: "4006381333931" });
    expect(portalGtin("00000096385074")).toEqual({ gtin: "96385074" });
    expect(portalGtin("14006381333938")).toEqual({ refused: expect.stringContaining("indicator digit 1") });
  });
});

describe("declarationOf", () => {
  it("maps mass, fibres and the making-up country", () => {
    const d = declarationOf(
      {
        id: "pp_1",
        status: "published",
        category: "textile",
        gtin: "04006381333931",
        data: {
          product_mass: { value: 150, unit: "g" },
          material_composition: [{ fiber: "Cotton", percentage: 100 }],
          manufacturer_country: "PT",
        },
      },
      "4006381333931",
      "brand-1",
    );
    expect(d).toEqual({
      gtins: ["4006381333931"],
      internalReference: "pp_1",
      brandId: "brand-1",
      mass: 150,
      materials: [{ id: "cotton", share: 1 }],
      countryMaking: "PT",
    });
    expect(sameDeclaration(d, { ...d })).toBe(true);
    expect(sameDeclaration(d, { ...d, mass: 151 })).toBe(false);
  });
});

describe("the simulated score", () => {
  it("is deterministic and moves with the data", () => {
    const a = simulatedScore({ mass: 200, materials: [{ id: "cotton", share: 1 }], countryMaking: "PT" });
    expect(a).toEqual({ score: 2.64, standardized: 1.32, durability: 1 });
    expect(
      simulatedScore({ mass: 400, materials: [{ id: "cotton", share: 1 }], countryMaking: "PT" }).score,
    ).toBe(5.28);
  });
});

describe("blockers", () => {
  const passport = { id: "pp_1", status: "published", category: "textile", gtin: "04006381333931", data: {} };
  it("lists each refusal a filing would meet", () => {
    expect(
      blockersOf({
        livemode: false,
        passport: { ...passport, status: "draft", gtin: null },
        delegationStatus: "pending",
        attested: false,
        entitlement: "unavailable",
        portalConfigured: true,
      }),
    ).toEqual([
      "test_mode_refused",
      "entitlement_unavailable",
      "wrong_status",
      "gtin_required",
      "attestation_required",
      "delegation_required",
    ]);
    expect(
      blockersOf({
        livemode: true,
        passport,
        delegationStatus: "active",
        attested: true,
        entitlement: "included",
        portalConfigured: true,
      }),
    ).toEqual([]);
  });
  it("derives the entitlement from the plan", () => {
    expect(entitlementOf({ planId: "pro", subscriptionStatus: "active" })).toBe("included");
    expect(entitlementOf({ planId: "trial", subscriptionStatus: "trialing" })).toBe("free_offer");
    expect(entitlementOf({ planId: "pro", subscriptionStatus: "past_due" })).toBe("unavailable");
    expect(entitlementOf(undefined)).toBe("unavailable");
  });
});
