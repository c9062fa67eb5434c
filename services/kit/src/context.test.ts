import { Metadata } from "@grpc/grpc-js";
import { ApiError } from "./errors";
import { contextFromMetadata, contextToMetadata, requireTenant, type RequestContext } from "./context";

const roundTrip = (ctx: RequestContext) => contextFromMetadata(contextToMetadata(ctx));

describe("request context in gRPC metadata", () => {
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

  it("keeps livemode false as false (test mode is not 'no mode')", () => {
    const ctx: RequestContext = {
      requestId: "req_t",
      organizationId: "org_2",
      livemode: false,
      credentialKind: "secret",
    };
    const back = roundTrip(ctx);
    expect(back).toEqual(ctx);
    expect(back.livemode).toBe(false);
  });

  it("round-trips a public context without tenant or plan, adding nothing", () => {
    const back = roundTrip({ requestId: "req_pub" });
    expect(back).toEqual({ requestId: "req_pub" });
    expect(back).not.toHaveProperty("organizationId");
    expect(back).not.toHaveProperty("livemode");
    expect(back).not.toHaveProperty("plan");
  });

  it("adds to existing metadata without dropping its entries", () => {
    const md = new Metadata();
    md.set("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01");
    contextToMetadata({ requestId: "req_1", organizationId: "org_1", livemode: true }, md);
    expect(md.get("traceparent")).toEqual(["00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"]);
    expect(contextFromMetadata(md).organizationId).toBe("org_1");
  });

  it("ignores an unknown credential kind and fills a missing request id", () => {
    const md = new Metadata();
    md.set("x-dpp-credential-kind", "root");
    const ctx = contextFromMetadata(md);
    expect(ctx.credentialKind).toBeUndefined();
    expect(typeof ctx.requestId).toBe("string");
    expect(ctx.requestId.length).toBeGreaterThan(0);
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
