import { ApiError } from "@dpp/contract";
import { contextFromWire, contextToWire, requireTenant, type RequestContext } from "./context";

/** What a service reads back of what a caller wrote: the wire form through JSON, as inside the token. */
const roundTrip = (ctx: RequestContext) => contextFromWire(JSON.parse(JSON.stringify(contextToWire(ctx))));

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

  it("ignores unknown extra fields (a newer caller during a rolling update)", () => {
    expect(
      contextFromWire({ request_id: "req_1", organization_id: "org_1", livemode: true, region: "eu" }),
    ).toEqual({
      requestId: "req_1",
      organizationId: "org_1",
      livemode: true,
    });
  });

  // Nothing is dropped silently: an absent credential kind or limit would read as "unrestricted".
  it.each([
    ["an unknown credential kind", { request_id: "r", credential_kind: "root" }],
    ["a missing request id", { organization_id: "org_1", livemode: true }],
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
