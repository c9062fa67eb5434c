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
  // The methods that answer without passport and the portal (this harness runs neither); GetAffichage and
  // FileAffichage pass the same check of the signed context before their handler runs, and the e2e
  // authorization matrix covers them through the gateway.
  calls: [
    { method: "recordAttestation", request: () => ({ acceptedBy: "Forged", wordingVersion: "2026-01" }) },
    { method: "getFilingSettings", request: () => ({}) },
  ],
  snapshot: () => h.rowCounts(victim),
});
