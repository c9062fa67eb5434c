/**
 * The passport service as an attacker on its network would reach it: a direct gRPC call with a made-up
 * context, or with a genuine token for one organization rewritten to another. Each is refused
 * UNAUTHENTICATED and reads or writes nothing; only a call signed by a trusted caller gets through.
 */
import { randomBytes } from "node:crypto";
import { type RequestContext } from "@dpp/kit";
import {
  CONTEXT_METADATA_KEY,
  REQUEST_ID_METADATA_KEY,
  createContextSigner,
  generateInternalKeyPair,
} from "@dpp/kit/internal";
import { editToken, metadataOf, rawUnaryCall } from "@dpp/kit/testing";
import { passportV1 } from "@dpp/proto";
import { startHarness, tenantRowCounts, testTenant, liveTenant, type Harness, type Tenant } from "../harness";

const S = passportV1.PassportService;
const method = (name: string) => `/${S.typeName}/${name}`;

let h: Harness;
let victim: Tenant;
let victimLive: Tenant;
let attacker: Tenant;
let victimPassportId: string;

const ctxOf = (t: Tenant): RequestContext => ({
  requestId: `req_${randomBytes(4).toString("hex")}`,
  organizationId: t.organizationId,
  livemode: t.livemode,
  keyId: "key_x",
  credentialKind: "secret",
  plan: { planId: "scale", subscriptionStatus: "active" },
});

/** What a trusted caller (the gateway) would send for `t`. */
function genuineToken(t: Tenant, rpc: string): string {
  const gateway = createContextSigner({ issuer: "gateway", privateKey: h.service.callerKeys.privateKey });
  return gateway.sign(ctxOf(t), { audience: "passport", method: method(rpc), deadline: Date.now() + 5000 });
}

/** A token and a request id beside it, as the kit's client sends them. */
const withToken = (token: string) =>
  metadataOf([
    [CONTEXT_METADATA_KEY, token],
    [REQUEST_ID_METADATA_KEY, "req_trust"],
  ]);

/** Plain context headers, as the service once read them. */
const forgedHeaders = (t: Tenant) =>
  metadataOf([
    ["x-request-id", "req_forged"],
    ["x-dpp-organization-id", t.organizationId],
    ["x-dpp-livemode", String(t.livemode)],
    ["x-dpp-key-id", "key_forged"],
    ["x-dpp-credential-kind", "secret"],
    ["x-dpp-plan-id", "scale"],
    ["x-dpp-subscription-status", "active"],
  ]);

const createBody = { category: "textile", dataJson: JSON.stringify({ product_name: "Forged" }) };

async function snapshot() {
  return {
    test: await tenantRowCounts(h, victim),
    live: await tenantRowCounts(h, victimLive),
    attacker: await tenantRowCounts(h, attacker),
  };
}

beforeAll(async () => {
  h = await startHarness("passport_trust");
  victim = testTenant();
  victimLive = liveTenant(victim.organizationId);
  attacker = testTenant();
  victimPassportId = (await h.create(victim, { category: "textile", data: { product_name: "Real" } })).id;
});
afterAll(async () => {
  await h?.close();
});

describe("a direct call to passport", () => {
  it("with a made-up context and no proof is refused and touches nothing", async () => {
    const before = await snapshot();
    const read = await rawUnaryCall(
      h.service.address,
      S,
      "getPassport",
      { id: victimPassportId },
      forgedHeaders(victim),
    );
    expect(read).toMatchObject({ ok: false, status: "UNAUTHENTICATED" });
    const list = await rawUnaryCall(h.service.address, S, "listPassports", {}, forgedHeaders(victim));
    expect(list).toMatchObject({ ok: false, status: "UNAUTHENTICATED" });
    const write = await rawUnaryCall(
      h.service.address,
      S,
      "createPassport",
      createBody,
      forgedHeaders(victimLive),
    );
    expect(write).toMatchObject({ ok: false, status: "UNAUTHENTICATED" });
    expect(await snapshot()).toEqual(before);
  });

  it("with a genuine token for organization A rewritten to organization B is refused and touches nothing", async () => {
    const before = await snapshot();
    const toVictim = (claims: Record<string, any>) => {
      claims.ctx.organization_id = victim.organizationId;
    };
    const read = await rawUnaryCall(
      h.service.address,
      S,
      "getPassport",
      { id: victimPassportId },
      withToken(editToken(genuineToken(attacker, "GetPassport"), toVictim)),
    );
    expect(read).toMatchObject({ ok: false, status: "UNAUTHENTICATED" });
    const write = await rawUnaryCall(
      h.service.address,
      S,
      "createPassport",
      createBody,
      withToken(
        editToken(genuineToken(attacker, "CreatePassport"), (c) => {
          toVictim(c);
          c.ctx.livemode = true;
        }),
      ),
    );
    expect(write).toMatchObject({ ok: false, status: "UNAUTHENTICATED" });
    expect(await snapshot()).toEqual(before);
  });

  it("with a token signed by a key the service does not trust is refused", async () => {
    const impostor = createContextSigner({
      issuer: "gateway",
      privateKey: generateInternalKeyPair().privateKey,
    });
    const token = impostor.sign(ctxOf(victim), { audience: "passport", method: method("GetPassport") });
    const read = await rawUnaryCall(
      h.service.address,
      S,
      "getPassport",
      { id: victimPassportId },
      withToken(token),
    );
    expect(read).toMatchObject({ ok: false, status: "UNAUTHENTICATED" });
  });

  it("with a genuine token for organization A asking for B's passport by id finds nothing", async () => {
    const read = await rawUnaryCall(
      h.service.address,
      S,
      "getPassport",
      { id: victimPassportId },
      withToken(genuineToken(attacker, "GetPassport")),
    );
    expect(read).toMatchObject({ ok: false, status: "NOT_FOUND" });
  });

  it("with a genuine token for the organization itself answers", async () => {
    const read = await rawUnaryCall(
      h.service.address,
      S,
      "getPassport",
      { id: victimPassportId },
      withToken(genuineToken(victim, "GetPassport")),
    );
    expect(read.ok).toBe(true);
    expect(read.ok && read.response.passport?.id).toBe(victimPassportId);
  });
});
