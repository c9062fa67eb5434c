import { ApiError } from "@dpp/contract";
import {
  contextFromWire,
  contextToWire,
  isRequestId,
  requireTenant,
  withRequestId,
  type RequestContext,
} from "./context";

/**
 * What a service reads back of what a caller wrote: the wire form through JSON, as inside the token,
 * with the request id that travels beside it.
 */
const roundTrip = (ctx: RequestContext) => {
  const signed = contextFromWire(JSON.parse(JSON.stringify(contextToWire(ctx))));
  return signed && withRequestId(signed, ctx.requestId);
};

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
      idempotency: { key: "k", fingerprint: "f".repeat(64), caller_organization_id: "org_1" },
    })!;
    const a = withRequestId(signed, "req_a");
    const b = withRequestId(signed, "req_b");
    expect([a.requestId, b.requestId]).toEqual(["req_a", "req_b"]);
    expect(a).toEqual({ ...b, requestId: "req_a" });
    a.plan!.publishLimit = 1000;
    a.idempotency!.key = "other";
    a.livemode = false;
    expect(b.plan?.publishLimit).toBe(5);
    expect(b.idempotency?.key).toBe("k");
    expect(b.livemode).toBe(true);
    expect(signed.plan?.publishLimit).toBe(5);
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
