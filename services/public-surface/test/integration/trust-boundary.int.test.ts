/** The public surface's gRPC side as an attacker on its network would reach it (the kit's trust-boundary suite). */
import { describeTrustBoundary, newTenant } from "@dpp/kit/testing";
import { publicSurfaceV1 } from "@dpp/proto";
import { startHarness, type Harness } from "../harness";

let h: Harness;
const victim = newTenant();

beforeAll(async () => {
  h = await startHarness("public_surface_trust");
});
afterAll(async () => {
  await h?.close();
});

describeTrustBoundary(publicSurfaceV1.PublicSurfaceService, {
  under: () => h.service,
  tenant: () => victim,
  calls: [{ method: "purgeCache", request: () => ({ passportId: "" }) }],
});
