import { Metadata } from "@grpc/grpc-js";
import { ApiError } from "./errors";

export type CredentialKind = "secret" | "connector";

/** The organization's plan entitlements, resolved once by the gateway (see plans.ts). */
export interface PlanContext {
  planId: string;
  subscriptionStatus: string;
  publishLimit?: number;
  unitLimit?: number;
  documentLimit?: number;
}

/**
 * What the gateway established about a request and passes to every service in
 * gRPC metadata. Services trust it and never see API keys.
 */
export interface RequestContext {
  requestId: string;
  /** The organization named in the path (the tenant), absent on public calls. */
  organizationId?: string;
  livemode?: boolean;
  keyId?: string;
  credentialKind?: CredentialKind;
  plan?: PlanContext;
}

/** A context with a tenant: what every tenant-scoped handler requires. */
export interface TenantContext extends RequestContext {
  organizationId: string;
  livemode: boolean;
}

const H = {
  requestId: "x-request-id",
  organizationId: "x-dpp-organization-id",
  livemode: "x-dpp-livemode",
  keyId: "x-dpp-key-id",
  credentialKind: "x-dpp-credential-kind",
  planId: "x-dpp-plan-id",
  subscriptionStatus: "x-dpp-subscription-status",
  publishLimit: "x-dpp-publish-limit",
  unitLimit: "x-dpp-unit-limit",
  documentLimit: "x-dpp-document-limit",
} as const;

export function contextToMetadata(ctx: RequestContext, md = new Metadata()): Metadata {
  md.set(H.requestId, ctx.requestId);
  if (ctx.organizationId !== undefined) md.set(H.organizationId, ctx.organizationId);
  if (ctx.livemode !== undefined) md.set(H.livemode, ctx.livemode ? "true" : "false");
  if (ctx.keyId !== undefined) md.set(H.keyId, ctx.keyId);
  if (ctx.credentialKind !== undefined) md.set(H.credentialKind, ctx.credentialKind);
  if (ctx.plan) {
    md.set(H.planId, ctx.plan.planId);
    md.set(H.subscriptionStatus, ctx.plan.subscriptionStatus);
    if (ctx.plan.publishLimit !== undefined) md.set(H.publishLimit, String(ctx.plan.publishLimit));
    if (ctx.plan.unitLimit !== undefined) md.set(H.unitLimit, String(ctx.plan.unitLimit));
    if (ctx.plan.documentLimit !== undefined) md.set(H.documentLimit, String(ctx.plan.documentLimit));
  }
  return md;
}

function one(md: Metadata, key: string): string | undefined {
  const v = md.get(key)[0];
  return typeof v === "string" && v.length > 0 ? v : undefined;
}

export function contextFromMetadata(md: Metadata): RequestContext {
  const ctx: RequestContext = { requestId: one(md, H.requestId) ?? "req_unknown" };
  const org = one(md, H.organizationId);
  if (org) ctx.organizationId = org;
  const live = one(md, H.livemode);
  if (live) ctx.livemode = live === "true";
  const keyId = one(md, H.keyId);
  if (keyId) ctx.keyId = keyId;
  const kind = one(md, H.credentialKind);
  if (kind === "secret" || kind === "connector") ctx.credentialKind = kind;
  const planId = one(md, H.planId);
  if (planId) {
    ctx.plan = { planId, subscriptionStatus: one(md, H.subscriptionStatus) ?? "none" };
    const limit = (key: string) => {
      const v = one(md, key);
      return v !== undefined && /^\d+$/.test(v) ? Number(v) : undefined;
    };
    const publishLimit = limit(H.publishLimit);
    const unitLimit = limit(H.unitLimit);
    const documentLimit = limit(H.documentLimit);
    if (publishLimit !== undefined) ctx.plan.publishLimit = publishLimit;
    if (unitLimit !== undefined) ctx.plan.unitLimit = unitLimit;
    if (documentLimit !== undefined) ctx.plan.documentLimit = documentLimit;
  }
  return ctx;
}

/** Narrows to a tenant context; a call without one is a wiring fault, not client input. */
export function requireTenant(ctx: RequestContext): TenantContext {
  if (ctx.organizationId === undefined || ctx.livemode === undefined) {
    throw new ApiError(
      "configuration_error",
      "The request reached a tenant endpoint without a tenant context.",
    );
  }
  return ctx as TenantContext;
}
