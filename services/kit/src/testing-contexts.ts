/**
 * Request contexts as the gateway makes them, for tests that call a service directly: a tenant's
 * (tenantContext) and a keyed write's (keyedContext, with the Idempotency-Key the gateway scoped).
 */
import { createHash, randomBytes } from "node:crypto";
import type { PlanContext, TenantContext } from "./context";

/** An organization and a mode: whose data a call reads and writes. */
export interface Tenant {
  organizationId: string;
  livemode: boolean;
}

/** A fresh organization id, unknown to every other test. */
export const newOrganizationId = (): string => `org_${randomBytes(6).toString("hex")}`;

/** A tenant of its own, in test mode unless `livemode` is given. */
export const newTenant = (livemode = false): Tenant => ({ organizationId: newOrganizationId(), livemode });

const SCALE: PlanContext = { planId: "scale", subscriptionStatus: "active" };

/**
 * The context of a call for `tenant` (a fresh test-mode organization when omitted) made with a secret key on
 * the Scale plan, with a fresh request id; `extra` overrides any field.
 */
export function tenantContext(
  tenant: Partial<Tenant> = {},
  extra: Partial<TenantContext> = {},
): TenantContext {
  return {
    requestId: `req_${randomBytes(12).toString("hex")}`,
    organizationId: tenant.organizationId ?? newOrganizationId(),
    livemode: tenant.livemode ?? false,
    keyId: "key_test",
    credentialKind: "secret",
    plan: SCALE,
    ...extra,
  };
}

/**
 * The context of a write under an Idempotency-Key: `key` (a fresh one when omitted) scoped to the tenant's own
 * organization, with the fingerprint of `request` (any JSON value; the same request gives the same fingerprint,
 * as the gateway's fingerprint of method, path and body does).
 */
export function keyedContext(
  tenant: Partial<Tenant> = {},
  o: { key?: string; request?: unknown; extra?: Partial<TenantContext> } = {},
): TenantContext {
  const ctx = tenantContext(tenant, o.extra);
  return {
    ...ctx,
    idempotency: {
      key: o.key ?? `key_${randomBytes(8).toString("hex")}`,
      fingerprint: createHash("sha256")
        .update(JSON.stringify(o.request ?? null))
        .digest("hex"),
      callerOrganizationId: ctx.organizationId,
    },
  };
}
