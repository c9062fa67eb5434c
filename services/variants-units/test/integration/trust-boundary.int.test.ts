/** The variants-units service as an attacker on its network would reach it (the kit's trust-boundary suite). */
import { describeTrustBoundary, newTenant } from "@dpp/kit/testing";
import { variantsUnitsV1 } from "@dpp/proto";
import { startHarness, type Harness } from "../harness";

let h: Harness;
const victim = newTenant();

beforeAll(async () => {
  h = await startHarness("variants_units_trust");
});
afterAll(async () => {
  await h?.close();
});

// The calls a genuine token of the tenant gets answered without a passport service (the others read the passport
// first: the e2e tests cover them through the gateway).
describeTrustBoundary(variantsUnitsV1.VariantsUnitsService, {
  under: () => h.service,
  tenant: () => victim,
  calls: [
    { method: "getPublishFacts", request: () => ({ passportId: "pp_1" }) },
    { method: "findVariantOwners", request: () => ({ variantIds: ["var_1"] }) },
    { method: "getUnitUsage", request: () => ({}) },
  ],
  snapshot: () => h.rowCounts(victim),
});
