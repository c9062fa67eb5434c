/**
 * The passport service as an attacker on its network would reach it (the kit's trust-boundary suite): a direct
 * gRPC call with a made-up context, or with a genuine token for one organization rewritten to another, is
 * refused UNAUTHENTICATED and reads or writes nothing; only a call signed by a trusted caller gets through. And a
 * genuine token for one organization finds nothing of another's by id.
 */
import { CONTEXT_METADATA_KEY, REQUEST_ID_METADATA_KEY, createContextSigner } from "@dpp/kit/internal";
import { describeTrustBoundary, metadataOf, rawUnaryCall } from "@dpp/kit/testing";
import { passportV1 } from "@dpp/proto";
import { startHarness, tenantRowCounts, testTenant, liveTenant, type Harness, type Tenant } from "../harness";

const S = passportV1.PassportService;

let h: Harness;
let victim: Tenant;
let victimLive: Tenant;
let victimPassportId: string;

beforeAll(async () => {
  h = await startHarness("passport_trust");
  victim = testTenant();
  victimLive = liveTenant(victim.organizationId);
  victimPassportId = (await h.create(victim, { category: "textile", data: { product_name: "Real" } })).id;
});
afterAll(async () => {
  await h?.close();
});

describeTrustBoundary(S, {
  under: () => h.service,
  tenant: () => victim,
  calls: [
    { method: "getPassport", request: () => ({ id: victimPassportId }) },
    { method: "listPassports", request: () => ({}) },
    {
      method: "createPassport",
      request: () => ({ category: "textile", dataJson: JSON.stringify({ product_name: "Forged" }) }),
    },
    {
      method: "createPassports",
      request: () => ({
        rows: [
          { key: "forged:0", category: "textile", dataJson: JSON.stringify({ product_name: "Forged" }) },
        ],
      }),
    },
  ],
  snapshot: async () => ({
    test: await tenantRowCounts(h, victim),
    live: await tenantRowCounts(h, victimLive),
  }),
});

it("a genuine token for organization A asking for B's passport by id finds nothing", async () => {
  const attacker = testTenant();
  const token = createContextSigner({ issuer: "gateway", privateKey: h.service.callerKeys.privateKey }).sign(
    { organizationId: attacker.organizationId, livemode: attacker.livemode },
    { audience: "passport", method: `/${S.typeName}/GetPassport`, deadline: Date.now() + 5000 },
  );
  const read = await rawUnaryCall(
    h.service.address,
    S,
    "getPassport",
    { id: victimPassportId },
    metadataOf([
      [CONTEXT_METADATA_KEY, token],
      [REQUEST_ID_METADATA_KEY, "req_trust"],
    ]),
  );
  expect(read).toMatchObject({ ok: false, status: "NOT_FOUND" });
});
