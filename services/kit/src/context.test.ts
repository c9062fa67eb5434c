import { ApiError } from "@dpp/contract";
import {
  contextFromWire,
  contextToWire,
  idempotencyOf,
  isFingerprint,
  isIdempotencyKey,
  isRequestId,
  requireTenant,
  withRequestId,
  type IdempotencyBeside,
  type RequestContext,
} from "./context";

/**
 * What a service reads back of what a caller wrote: the wire form through JSON, as inside the token,
 * with the request id and the Idempotency-Key and fingerprint that travel beside it.
 */
const roundTrip = (ctx: RequestContext) => {
  const signed = contextFromWire(JSON.parse(JSON.stringify(contextToWire(ctx))));
  if (!signed) return undefined;
  const i = ctx.idempotency;
  const idempotency = idempotencyOf(signed.idempotency, i && { key: i.key, fingerprint: i.fingerprint });
  return idempotency === null ? undefined : withRequestId(signed, ctx.requestId, idempotency);
};

const FP = "f".repeat(64);

describe("request context in its wire form (the ctx claim of the signed token)", () => {
  it("round-trips a full tenant context with plan", () => {
    const ctx: RequestContext = {
      requestId: "req_abc",
      organizationId: "org_1",
      livemode: true,
      keyId: "key_9",
      credentialKind: "connector",
      plan: { planId: "plan_pro", subscriptionStatus: "active" },
    };
    expect(roundTrip(ctx)).toEqual(ctx);
  });

  it("round-trips the plan limits, zero included", () => {
    const ctx: RequestContext = {
      requestId: "req_lim",
      organizationId: "org_1",
      livemode: true,
      plan: {
        planId: "starter",
        subscriptionStatus: "active",
        publishLimit: 0,
        unitLimit: 1000,
        documentLimit: 200,
      },
    };
    expect(roundTrip(ctx)).toEqual(ctx);
    expect(contextToWire(ctx).plan).toEqual({
      plan_id: "starter",
      subscription_status: "active",
      publish_limit: 0,
      unit_limit: 1000,
      document_limit: 200,
    });
  });

  it("keeps livemode false as false (test mode is not 'no mode')", () => {
    const ctx: RequestContext = {
      requestId: "req_t",
      organizationId: "org_2",
      livemode: false,
      credentialKind: "secret",
    };
    const back = roundTrip(ctx);
    expect(back).toEqual(ctx);
    expect(back?.livemode).toBe(false);
  });

  it("round-trips a public context without tenant or plan, adding nothing", () => {
    const back = roundTrip({ requestId: "req_pub" });
    expect(back).toEqual({ requestId: "req_pub" });
    expect(back).not.toHaveProperty("organizationId");
    expect(back).not.toHaveProperty("livemode");
    expect(back).not.toHaveProperty("plan");
  });

  it("leaves the request id and the outcome out of the wire form", () => {
    const ctx: RequestContext = {
      requestId: "req_out",
      organizationId: "org_1",
      livemode: true,
      outcome: { idempotentReplayed: true },
    };
    const publicCtx: RequestContext = { requestId: "req_pub" };
    expect(contextToWire(ctx)).toEqual({ organization_id: "org_1", livemode: true });
    expect(contextToWire(publicCtx)).toEqual({});
  });

  it("signs of an Idempotency-Key only that there is one and its caller organization", () => {
    const ctx: RequestContext = {
      requestId: "req_w",
      organizationId: "org_1",
      livemode: true,
      keyId: "key_9",
      idempotency: { key: "k-1", fingerprint: FP, callerOrganizationId: "org_holder" },
    };
    expect(contextToWire(ctx)).toEqual({
      organization_id: "org_1",
      livemode: true,
      key_id: "key_9",
      idempotency: { caller_organization_id: "org_holder" },
    });
    expect(JSON.stringify(contextToWire(ctx))).not.toContain("k-1");
    expect(roundTrip(ctx)).toEqual(ctx);
  });

  it("reads the key and fingerprint a caller of an earlier version signed into the claim", () => {
    expect(
      contextFromWire({
        organization_id: "org_1",
        livemode: false,
        idempotency: { key: "k-old", fingerprint: FP, caller_organization_id: "org_1" },
      }),
    ).toEqual({
      organizationId: "org_1",
      livemode: false,
      idempotency: { key: "k-old", fingerprint: FP, callerOrganizationId: "org_1" },
    });
  });

  it("ignores unknown extra fields (a newer caller during a rolling update), a request_id of an older one too", () => {
    expect(
      contextFromWire({ request_id: "req_1", organization_id: "org_1", livemode: true, region: "eu" }),
    ).toEqual({
      organizationId: "org_1",
      livemode: true,
    });
  });

  // Nothing is dropped silently: an absent credential kind or limit would read as "unrestricted".
  it.each([
    ["an unknown credential kind", { request_id: "r", credential_kind: "root" }],
    ["livemode as text", { request_id: "r", organization_id: "org_1", livemode: "true" }],
    ["an empty organization id", { request_id: "r", organization_id: "", livemode: true }],
    [
      "a limit as text",
      { request_id: "r", plan: { plan_id: "pro", subscription_status: "active", publish_limit: "9" } },
    ],
    [
      "a negative limit",
      { request_id: "r", plan: { plan_id: "pro", subscription_status: "active", unit_limit: -1 } },
    ],
    [
      "a fractional limit",
      { request_id: "r", plan: { plan_id: "pro", subscription_status: "active", unit_limit: 1.5 } },
    ],
    ["a plan without status", { request_id: "r", plan: { plan_id: "pro" } }],
    ["an idempotency without caller organization", { idempotency: { key: "k", fingerprint: FP } }],
    ["a signed key without its fingerprint", { idempotency: { key: "k", caller_organization_id: "org_1" } }],
    [
      "a signed fingerprint without its key",
      { idempotency: { fingerprint: FP, caller_organization_id: "org_1" } },
    ],
    [
      "a signed fingerprint in upper case",
      { idempotency: { key: "k", fingerprint: FP.toUpperCase(), caller_organization_id: "org_1" } },
    ],
    [
      "a signed key longer than 255 characters",
      { idempotency: { key: "k".repeat(256), fingerprint: FP, caller_organization_id: "org_1" } },
    ],
    ["not an object", "req_1"],
    ["null", null],
  ])("refuses %s", (_what, wire) => {
    expect(contextFromWire(wire)).toBeUndefined();
  });
});

describe("withRequestId", () => {
  it("gives each call objects of its own, nested ones included", () => {
    const signed = contextFromWire({
      organization_id: "org_1",
      livemode: true,
      plan: { plan_id: "pro", subscription_status: "active", publish_limit: 5 },
      idempotency: { caller_organization_id: "org_1" },
    })!;
    const idempotency = idempotencyOf(signed.idempotency, { key: "k", fingerprint: FP })!;
    const a = withRequestId(signed, "req_a", idempotency);
    const b = withRequestId(signed, "req_b", idempotency);
    expect([a.requestId, b.requestId]).toEqual(["req_a", "req_b"]);
    expect(a).toEqual({ ...b, requestId: "req_a" });
    a.plan!.publishLimit = 1000;
    a.idempotency!.key = "other";
    a.idempotency!.callerOrganizationId = "org_other";
    a.livemode = false;
    expect(b.plan?.publishLimit).toBe(5);
    expect(b.idempotency).toEqual({ key: "k", fingerprint: FP, callerOrganizationId: "org_1" });
    expect(b.livemode).toBe(true);
    expect(signed.plan?.publishLimit).toBe(5);
    expect(signed.idempotency).toEqual({ callerOrganizationId: "org_1" });
  });

  it("refuses to make a call context of a signed idempotency without the call's key", () => {
    const signed = {
      organizationId: "org_1",
      livemode: true,
      idempotency: { callerOrganizationId: "org_1" },
    };
    expect(() => withRequestId(signed, "req_a")).toThrow();
  });
});

describe("idempotencyOf: the signed idempotency with the key and fingerprint beside the token", () => {
  const signed = { callerOrganizationId: "org_holder" };
  const earlier = { callerOrganizationId: "org_holder", key: "k-old", fingerprint: FP };
  const beside = (key: string | undefined, fingerprint: string | undefined): IdempotencyBeside => ({
    key,
    fingerprint,
  });

  it("joins a valid key and fingerprint to the signed caller organization", () => {
    expect(idempotencyOf(signed, beside("k-1", FP))).toEqual({
      key: "k-1",
      fingerprint: FP,
      callerOrganizationId: "org_holder",
    });
    expect(idempotencyOf(signed, beside("k".repeat(255), "0123456789abcdef".repeat(4)))).toMatchObject({
      key: "k".repeat(255),
    });
  });

  it("is undefined for a call without an Idempotency-Key on either side", () => {
    expect(idempotencyOf(undefined, undefined)).toBeUndefined();
  });

  it.each([
    ["nothing beside a signed idempotency", signed, undefined],
    ["no key (absent or sent twice)", signed, beside(undefined, FP)],
    ["no fingerprint (absent or sent twice)", signed, beside("k-1", undefined)],
    ["an empty key", signed, beside("", FP)],
    ["a key longer than 255 characters", signed, beside("k".repeat(256), FP)],
    ["a fingerprint of 63 hex digits", signed, beside("k-1", FP.slice(1))],
    ["a fingerprint in upper case", signed, beside("k-1", FP.toUpperCase())],
    ["a fingerprint sent twice and joined", signed, beside("k-1", `${FP}, ${FP}`)],
    ["a key beside a token that signs none", undefined, beside("k-1", FP)],
    ["an empty entry beside a token that signs none", undefined, beside(undefined, undefined)],
    ["another key beside an earlier caller's signed one", earlier, beside("k-new", FP)],
    ["another fingerprint beside an earlier caller's signed one", earlier, beside("k-old", "e".repeat(64))],
    ["half of an earlier caller's signed pair", earlier, beside("k-old", undefined)],
  ])("is null (malformed) for %s", (_what, s, b) => {
    expect(idempotencyOf(s, b)).toBeNull();
  });

  it("keeps what a caller of an earlier version signed, alone or with the same key and fingerprint beside it", () => {
    const expected = { key: "k-old", fingerprint: FP, callerOrganizationId: "org_holder" };
    expect(idempotencyOf(earlier, undefined)).toEqual(expected);
    expect(idempotencyOf(earlier, beside("k-old", FP))).toEqual(expected);
  });
});

describe("isIdempotencyKey and isFingerprint", () => {
  it("accept what the claims accepted: 1 to 255 characters, 64 lowercase hex digits", () => {
    expect(isIdempotencyKey("k")).toBe(true);
    expect(isIdempotencyKey("k".repeat(255))).toBe(true);
    expect(isIdempotencyKey("")).toBe(false);
    expect(isIdempotencyKey("k".repeat(256))).toBe(false);
    expect(isIdempotencyKey(undefined)).toBe(false);
    expect(isFingerprint(FP)).toBe(true);
    expect(isFingerprint("0123456789abcdef".repeat(4))).toBe(true);
    expect(isFingerprint("g".repeat(64))).toBe(false);
    expect(isFingerprint(FP + "0")).toBe(false);
    expect(isFingerprint(undefined)).toBe(false);
  });
});

describe("isRequestId", () => {
  it("accepts 1 to 200 characters, as the claim did", () => {
    expect(isRequestId("req_0123456789abcdef01234567")).toBe(true);
    expect(isRequestId("r".repeat(200))).toBe(true);
    expect(isRequestId("")).toBe(false);
    expect(isRequestId("r".repeat(201))).toBe(false);
    expect(isRequestId(undefined)).toBe(false);
    expect(isRequestId(7)).toBe(false);
  });
});

describe("requireTenant", () => {
  it("returns the context when it has a tenant (test mode too)", () => {
    const ctx = { requestId: "r", organizationId: "org_1", livemode: false };
    expect(requireTenant(ctx)).toBe(ctx);
  });

  it.each([
    [{ requestId: "r" }],
    [{ requestId: "r", organizationId: "org_1" }],
    [{ requestId: "r", livemode: true }],
  ])("throws configuration_error without a full tenant: %j", (ctx: RequestContext) => {
    let caught: unknown;
    try {
      requireTenant(ctx);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(ApiError);
    expect((caught as ApiError).code).toBe("configuration_error");
    expect((caught as ApiError).status).toBe(500);
  });
});
