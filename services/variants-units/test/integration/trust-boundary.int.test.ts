/**
 * The variants-units service as an attacker on its network would reach it (the kit's trust-boundary suite): every
 * RPC of VariantsUnitsService, sent without a valid signed context, is refused UNAUTHENTICATED and changes
 * nothing; the same calls signed for the tenant are answered. The passport service runs beside it (test/harness.ts);
 * the passports and rows the calls name (a variant, a unit) are made first by genuine calls.
 */
import { describeTrustBoundary, newTenant, tenantContext } from "@dpp/kit/testing";
import { variantsUnitsV1 } from "@dpp/proto";
import { startHarness, type Harness } from "../harness";

let h: Harness;
const victim = newTenant();
let TEXTILE = "";
let BATTERY = "";
let variantId = "";
let unitId = "";

beforeAll(async () => {
  h = await startHarness("variants_units_trust");
  const ctx = () => tenantContext(victim);
  TEXTILE = await h.createPassport(victim, "textile");
  BATTERY = await h.createPassport(victim, "battery");
  const created = await h.client.createVariants(
    { passportId: TEXTILE, variants: [{ gtin: "4006381333931", size: "S" }] },
    { context: ctx() },
  );
  variantId = created.variants[0]!.id;
  const units = await h.client.createUnits(
    { passportId: BATTERY, units: [{ unitSerial: "U-1" }] },
    { context: ctx() },
  );
  unitId = units.units[0]!.id;
});
afterAll(async () => {
  await h?.close();
});

const reading = JSON.stringify({
  field: "state_of_health",
  value: { value: 97, unit: "%" },
  source: "measurement",
  observed_on: "2026-01-15",
});

// Every method of the service, each with a request a genuine call of the tenant gets answered.
const calls = [
  { method: "listVariants", request: () => ({ passportId: TEXTILE }) },
  {
    method: "createVariants",
    request: () => ({ passportId: TEXTILE, variants: [{ gtin: "96385074", colour: "Red" }] }),
  },
  { method: "deleteVariant", request: () => ({ passportId: TEXTILE, variantId }) },
  { method: "removeVariants", request: () => ({ passportId: TEXTILE, gtins: ["036000291452"] }) },
  { method: "getVariantReview", request: () => ({ passportId: TEXTILE }) },
  { method: "getPublishFacts", request: () => ({ passportId: TEXTILE }) },
  { method: "findVariantOwners", request: () => ({ variantIds: ["var_1"] }) },
  { method: "listUnits", request: () => ({ passportId: BATTERY }) },
  { method: "createUnits", request: () => ({ passportId: BATTERY, units: [{ unitSerial: "U-2" }] }) },
  { method: "getUnit", request: () => ({ passportId: BATTERY, unitId }) },
  { method: "changeUnitStatus", request: () => ({ passportId: BATTERY, unitId, status: "original" }) },
  { method: "listUnitReadings", request: () => ({ passportId: BATTERY, unitId }) },
  { method: "recordUnitReading", request: () => ({ passportId: BATTERY, unitId, bodyJson: reading }) },
  { method: "getUnitUsage", request: () => ({}) },
  { method: "findReadings", request: () => ({ readingIds: ["rdg_1"] }) },
] as const;

it("probes every method of the service", () => {
  expect(calls.map((c) => c.method).sort()).toEqual(
    variantsUnitsV1.VariantsUnitsService.methods.map((m) => m.localName).sort(),
  );
});

describeTrustBoundary(variantsUnitsV1.VariantsUnitsService, {
  under: () => h.service,
  tenant: () => victim,
  calls,
  snapshot: () => h.rowCounts(victim),
});
