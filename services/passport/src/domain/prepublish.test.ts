import { ApiError } from "@dpp/contract";
import { type TenantContext } from "@dpp/kit";
import {
  CompositePrePublishCheck,
  defaultPrePublishChecks,
  nothingToCheck,
  type PrePublishCheck,
} from "./prepublish";

const tenant: TenantContext = { requestId: "r", organizationId: "org_1", livemode: true };
const passport = { id: "pp_1", category: "textile", status: "draft", version: 1, gtin: null, data: {} };

describe("pre-publish checks", () => {
  it("the default checks have nothing to check", async () => {
    await expect(defaultPrePublishChecks().check(tenant, passport, {})).resolves.toBeUndefined();
  });

  it("the first refusal wins and later checks are not asked", async () => {
    const asked: string[] = [];
    const refusing = (name: string, err?: ApiError): PrePublishCheck => ({
      name,
      check: () => {
        asked.push(name);
        return Promise.resolve(err);
      },
    });
    const composite = new CompositePrePublishCheck([
      refusing("documents"),
      refusing("units", new ApiError("unit_limit_reached", undefined, { limit: 1, current: 2 })),
      refusing("variants", new ApiError("variant_review_required")),
    ]);
    const err = await composite.check(tenant, passport, { variantReviewFingerprint: "a".repeat(64) });
    expect(err?.code).toBe("unit_limit_reached");
    expect(asked).toEqual(["documents", "units"]);
    await expect(nothingToCheck("x").check(tenant, passport, {})).resolves.toBeUndefined();
  });
});
