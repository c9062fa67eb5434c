/** The documents service as an attacker on its network would reach it (the kit's trust-boundary suite). */
import { describeTrustBoundary, newTenant } from "@dpp/kit/testing";
import { documentsV1 } from "@dpp/proto";
import { startHarness, type Harness } from "../harness";

let h: Harness;
const victim = newTenant();

beforeAll(async () => {
  h = await startHarness("documents_trust");
});
afterAll(async () => {
  await h?.close();
});

// The calls a genuine token of the tenant gets answered without a passport service (uploads and links need one:
// the e2e tests cover them).
describeTrustBoundary(documentsV1.DocumentsService, {
  under: () => h.service,
  tenant: () => victim,
  calls: [
    { method: "listDocuments", request: () => ({}) },
    { method: "getUsage", request: () => ({}) },
    { method: "checkPublish", request: () => ({ passportId: "pp_forged" }) },
  ],
  snapshot: () => h.rowCounts(victim),
});
