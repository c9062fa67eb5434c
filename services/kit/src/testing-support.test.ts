/** The kit's test support for service tests: contexts as the gateway makes them, and the refusal matcher. */
import { ApiError } from "@dpp/contract";
import { keyedContext, newTenant, tenantContext } from "./testing";

describe("tenantContext and keyedContext", () => {
  it("make a tenant's context with a fresh request id, for a fresh organization unless one is given", () => {
    const a = tenantContext();
    const b = tenantContext();
    expect(a.organizationId).toMatch(/^org_[0-9a-f]{12}$/);
    expect(a.organizationId).not.toBe(b.organizationId);
    expect(a.requestId).not.toBe(b.requestId);
    expect(a).toMatchObject({ livemode: false, credentialKind: "secret", plan: { planId: "scale" } });
    const t = newTenant(true);
    expect(tenantContext(t)).toMatchObject(t);
  });

  it("scope a keyed write's key to the tenant, with one fingerprint per request", () => {
    const t = newTenant();
    const one = keyedContext(t, { key: "k1", request: { name: "a" } });
    expect(one.idempotency).toMatchObject({ key: "k1", callerOrganizationId: t.organizationId });
    expect(keyedContext(t, { key: "k1", request: { name: "a" } }).idempotency!.fingerprint).toBe(
      one.idempotency!.fingerprint,
    );
    expect(keyedContext(t, { key: "k1", request: { name: "b" } }).idempotency!.fingerprint).not.toBe(
      one.idempotency!.fingerprint,
    );
    expect(keyedContext(t).idempotency!.key).not.toBe(keyedContext(t).idempotency!.key);
  });
});

describe("toBeRefusedWith", () => {
  const refused = () =>
    Promise.reject(
      new ApiError("validation_failed", "no", {
        issues: [{ source: { pointer: "/name" }, rule: "required" }],
      }),
    );

  it("passes for a refusal of that code, and details matched as toMatchObject matches", async () => {
    await expect(refused()).rejects.toBeRefusedWith("validation_failed");
    await expect(refused()).rejects.toBeRefusedWith("validation_failed", {
      issues: [expect.objectContaining({ rule: "required" })],
    });
  });

  it("fails for another code, other details, or an error that is no refusal", async () => {
    await expect(refused()).rejects.not.toBeRefusedWith("invalid_request");
    await expect(refused()).rejects.not.toBeRefusedWith("validation_failed", { issues: [] });
    await expect(Promise.reject(new Error("boom"))).rejects.not.toBeRefusedWith("validation_failed");
  });
});
