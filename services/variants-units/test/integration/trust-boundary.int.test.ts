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

describeTrustBoundary(variantsUnitsV1.VariantsUnitsService, {
  under: () => h.service,
  tenant: () => victim,
  calls: [
    { method: "listVariants", request: () => ({ passportId: "pp_1" }) },
    {
      method: "createVariants",
      request: () => ({ passportId: "pp_1", variants: [{ gtin: "4006381333931", size: "M" }] }),
    },
    { method: "deleteVariant", request: () => ({ passportId: "pp_1", variantId: "var_1" }) },
    { method: "removeVariants", request: () => ({ passportId: "pp_1", gtins: ["4006381333931"] }) },
    { method: "getVariantReview", request: () => ({ passportId: "pp_1" }) },
    { method: "getPublishFacts", request: () => ({ passportId: "pp_1" }) },
    { method: "findVariantOwners", request: () => ({ variantIds: ["var_1"] }) },
    { method: "listUnits", request: () => ({ passportId: "pp_1" }) },
    { method: "createUnits", request: () => ({ passportId: "pp_1", units: [{ unitSerial: "S1" }] }) },
    { method: "getUnit", request: () => ({ passportId: "pp_1", unitId: "unit_1" }) },
    {
      method: "changeUnitStatus",
      request: () => ({ passportId: "pp_1", unitId: "unit_1", status: "waste" }),
    },
    { method: "listUnitReadings", request: () => ({ passportId: "pp_1", unitId: "unit_1" }) },
    {
      method: "recordUnitReading",
      request: () => ({ passportId: "pp_1", unitId: "unit_1", bodyJson: "{}" }),
    },
    { method: "getUnitUsage", request: () => ({}) },
  ],
  snapshot: () => h.rowCounts(victim),
});
