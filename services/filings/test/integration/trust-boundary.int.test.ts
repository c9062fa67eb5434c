/** The filings service as an attacker on its network would reach it (the kit's trust-boundary suite). */
import { describeTrustBoundary, newTenant } from "@dpp/kit/testing";
import { filingsV1 } from "@dpp/proto";
import { startHarness, type Harness } from "../harness";

let h: Harness;
const victim = newTenant();

beforeAll(async () => {
  h = await startHarness("filings_trust");
});
afterAll(async () => {
  await h?.close();
});

describeTrustBoundary(filingsV1.FilingsService, {
  under: () => h.service,
  tenant: () => victim,
  calls: [
    { method: "getAffichage", request: () => ({ passportId: "pp_1" }) },
    {
      method: "fileAffichage",
      request: () => ({ passportId: "pp_1", delegation: { status: "active", portalBrandId: "b" } }),
    },
    { method: "recordAttestation", request: () => ({ acceptedBy: "Forged", wordingVersion: "2026-01" }) },
    { method: "getFilingSettings", request: () => ({}) },
  ],
  snapshot: () => h.rowCounts(victim),
});
