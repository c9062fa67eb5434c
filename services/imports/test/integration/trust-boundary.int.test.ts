/** The imports service as an attacker on its network would reach it (the kit's trust-boundary suite). */
import { describeTrustBoundary, newTenant, tenantContext } from "@dpp/kit/testing";
import { importsV1 } from "@dpp/proto";
import { startHarness, type Harness } from "../harness";

let h: Harness;
const victim = newTenant();
let victimJobId = "";

beforeAll(async () => {
  h = await startHarness("imports_trust");
  const queued = await h.client.createImport(
    { rows: [{ category: "textile", dataJson: "{}" }] },
    { context: tenantContext(victim) },
  );
  victimJobId = queued.job!.id;
});
afterAll(async () => {
  await h?.close();
});

describeTrustBoundary(importsV1.ImportsService, {
  under: () => h.service,
  tenant: () => victim,
  calls: [
    { method: "listImports", request: () => ({}) },
    {
      method: "createImport",
      request: () => ({ rows: [{ category: "textile", dataJson: "{}" }] }),
    },
    { method: "getImport", request: () => ({ id: victimJobId, rowLimit: 10 }) },
  ],
  snapshot: () => h.rowCounts(victim),
});
