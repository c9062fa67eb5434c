/** The attestation and the filing settings over gRPC: each tenant's own, refusals with the spec's codes. */
import { newTenant, tenantContext } from "@dpp/kit/testing";
import { startHarness, type Harness } from "../harness";

let h: Harness;

beforeAll(async () => {
  h = await startHarness("filings_attestation");
});
afterAll(async () => {
  await h?.close();
});

it("records an attestation for one organization and mode only", async () => {
  const t = newTenant();
  const before = await h.client.getFilingSettings({}, { context: tenantContext(t) });
  expect(before.attestationWordingVersion).toBeUndefined();
  expect(before.portalConfigured).toBe(false);
  const a = await h.client.recordAttestation(
    { acceptedBy: "Camille Martin", wordingVersion: "2026-01" },
    { context: tenantContext(t) },
  );
  expect(a).toMatchObject({ acceptedBy: "Camille Martin", wordingVersion: "2026-01" });
  const mine = await h.client.getFilingSettings({}, { context: tenantContext(t) });
  expect(mine).toMatchObject({
    attestationWordingVersion: "2026-01",
    attestationAcceptedBy: "Camille Martin",
  });
  // The other mode of the same organization, and another organization, have none.
  const otherMode = await h.client.getFilingSettings(
    {},
    { context: tenantContext({ ...t, livemode: !t.livemode }) },
  );
  expect(otherMode.attestationWordingVersion).toBeUndefined();
  const stranger = await h.client.getFilingSettings({}, { context: tenantContext() });
  expect(stranger.attestationWordingVersion).toBeUndefined();
  expect((await h.rowCounts(t)).attestation).toBe(1);
});

it("refuses an unnamed person and another wording version, writing nothing", async () => {
  const t = newTenant();
  await expect(
    h.client.recordAttestation({ acceptedBy: " ", wordingVersion: "2025-01" }, { context: tenantContext(t) }),
  ).rejects.toBeRefusedWith("validation_failed", {
    issues: [
      expect.objectContaining({ source: { pointer: "/accepted_by" } }),
      expect.objectContaining({ source: { pointer: "/wording_version" } }),
    ],
  });
  expect((await h.rowCounts(t)).attestation).toBe(0);
});
