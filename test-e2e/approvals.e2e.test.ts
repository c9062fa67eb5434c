/**
 * Publish approvals through the API: a connector's publish records an approval (202 human_approval_required)
 * that GET .../publish-approvals/{id} answers, in the organization and mode that asked only.
 */
import { DppError } from "@dpp/client";
import { envelope, startHarness, type Harness, type Tenant } from "./support/harness";
import { publishableTextile } from "./support/fixtures";

jest.setTimeout(180_000);

let h: Harness;
let t: Tenant;

beforeAll(async () => {
  h = await startHarness("approvals");
  t = await h.tenant("Acme", "pro");
});
afterAll(async () => {
  await h?.close();
});

it("records a connector's publish as a pending approval that the SDK and the API read back", async () => {
  const connector = await h.admin.createKey({
    organizationId: t.organizationId,
    livemode: false,
    kind: "connector",
  });
  const created = await h.request(`/organizations/${t.organizationId}/passports`, {
    key: t.testKey,
    body: {
      category: "textile",
      data: publishableTextile({
        product_name: "Linen shirt",
        material_composition: [{ fiber: "linen", percentage: 100 }],
        gtin: "4006381333931",
      }),
    },
  });
  h.expectStatus(created, 201);
  const id = created.body.id as string;

  const asked = await h.request(`/organizations/${t.organizationId}/passports/${id}/publish`, {
    key: connector.key,
    method: "POST",
  });
  expect(asked.status).toBe(202);
  const e = envelope(asked);
  expect(e.code).toBe("human_approval_required");
  const approvalId = e.details.approval_id as string;

  const sdk = h.sdk(t.testKey).organization(t.organizationId);
  const approval = await sdk.publishApprovals.get(approvalId);
  expect(approval.lastResponse.status).toBe(200);
  expect({ ...approval }).toEqual({
    object: "publish_approval",
    id: approvalId,
    name: `organizations/${t.organizationId}/publish-approvals/${approvalId}`,
    organization_id: t.organizationId,
    passport_id: id,
    passport: `organizations/${t.organizationId}/passports/${id}`,
    passport_version: 1,
    state: "pending",
    variant_review_fingerprint: null,
    review_url: e.details.review_url,
    requested_at: expect.any(String),
    livemode: false,
  });
  // The connector that asked reads it too; nothing was published.
  const byConnector = await h.request(`/organizations/${t.organizationId}/publish-approvals/${approvalId}`, {
    key: connector.key,
  });
  expect(byConnector.body).toEqual({ ...approval });
  expect((await sdk.passports.get(id)).status).toBe("draft");

  // Not in the other mode, not for another organization.
  const otherMode = await h.request(`/organizations/${t.organizationId}/publish-approvals/${approvalId}`, {
    key: t.liveKey,
  });
  expect(otherMode.status).toBe(404);
  expect(envelope(otherMode)).toMatchObject({
    code: "resource_not_found",
    details: { publish_approval_id: approvalId },
  });
  const stranger = await h.tenant("Stranger");
  const foreign = await h.request(
    `/organizations/${stranger.organizationId}/publish-approvals/${approvalId}`,
    {
      key: stranger.testKey,
    },
  );
  expect(foreign.status).toBe(404);
  await expect(
    h.sdk(stranger.testKey).organization(stranger.organizationId).publishApprovals.get(approvalId),
  ).rejects.toBeInstanceOf(DppError);
});
