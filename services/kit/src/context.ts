import { z } from "zod";
import { ApiError } from "@dpp/contract";
import type { Logger } from "./logger";

/**
 * How the caller proved who it is: an API key (secret or connector), a person signed in to the review page, or an
 * authority token (an inspector's read of one organization's authority-tier files, docs/decisions/0058).
 */
export type CredentialKind = "secret" | "connector" | "person" | "authority";

/** The organization's plan entitlements, resolved once by the gateway (see plans.ts). */
export interface PlanContext {
  planId: string;
  subscriptionStatus: string;
  publishLimit?: number;
  unitLimit?: number;
  documentLimit?: number;
  /** Effective variant removals on published or deactivated passports per UTC day (decision 0051). */
  destructiveOperationCap?: number;
}

/**
 * What the gateway established about a request and passes to every service.
 * It travels inside the signed context token (internal-auth.ts), all but the
 * request id and a write's Idempotency-Key and fingerprint, which go beside it:
 * a service trusts the context because the token proves which service wrote it,
 * and never sees API keys.
 */
export interface RequestContext {
  /**
   * The gateway's id of the request (the `Request-Id` of its answer): for logs and the
   * idempotency record only, never a reason to allow anything. Not signed: it travels beside
   * the token (docs/decisions/0025-reusable-context-tokens.md).
   */
  requestId: string;
  /** The organization named in the path (the tenant), absent on public calls. */
  organizationId?: string;
  livemode?: boolean;
  keyId?: string;
  credentialKind?: CredentialKind;
  plan?: PlanContext;
  /**
   * The Idempotency-Key of a write and what it is scoped to (idempotency.ts); absent without a key. Its caller
   * organization is signed; its key and fingerprint travel beside the token
   * (docs/decisions/0031-keyed-writes-reuse-tokens.md).
   */
  idempotency?: IdempotencyContext;
  /**
   * Filled by the kit's client from the service's answer (never sent): whether the answer replayed the
   * result recorded under the call's Idempotency-Key.
   */
  outcome?: CallOutcome;
}

/** An Idempotency-Key as the gateway scoped it: the owning service records its result with the write. */
export interface IdempotencyContext {
  key: string;
  /** SHA-256 (hex) of the request: method, path and canonical body. */
  fingerprint: string;
  /**
   * The organization of the calling key (a grant's holder may differ from the tenant). Signed: it is identity,
   * which the service cannot derive (it knows the key's id, not the key's organization).
   */
  callerOrganizationId: string;
}

/**
 * What the token signs of a write's Idempotency-Key: that the call carries one, and whose scope it is recorded
 * in. The key and fingerprint travel beside the token (internal-auth.ts, IDEMPOTENCY_KEY_METADATA_KEY), so that
 * one token serves a key's writes to one method whatever their Idempotency-Keys.
 */
export interface SignedIdempotency {
  callerOrganizationId: string;
  /** Signed only by a caller of an earlier version, which put the key and fingerprint into the token. */
  key?: string;
  fingerprint?: string;
}

export interface CallOutcome {
  idempotentReplayed?: boolean;
}

/** A context with a tenant: what every tenant-scoped handler requires. */
export interface TenantContext extends RequestContext {
  organizationId: string;
  livemode: boolean;
}

/** What a handler receives besides its request message. */
export interface CallContext {
  /** The request context exactly as the caller signed it, with the call's request id: this call's own object. */
  ctx: RequestContext;
  /** The verified name of the calling service ("gateway", "admin"). */
  caller: string;
  /** The service's logger bound to the call's request id, method and caller (made when first read). */
  log: Logger;
  /**
   * The call's work deadline (ms since epoch; Infinity when the caller set none): the kit's transactions for this
   * call bound their waits by it and never commit after it (deadline.ts). Work outside the database checks it.
   */
  deadline: number;
  cancelled: () => boolean;
}

/** The longest identifier the context carries (request id, organization, key, plan, ...). */
const ID_MAX_LENGTH = 200;
/** The longest Idempotency-Key (the gateway's rule, docs/decisions/0010-idempotency-and-rate-limits.md). */
const IDEMPOTENCY_KEY_MAX_LENGTH = 255;
/** A request fingerprint: SHA-256 in lowercase hex. */
const FINGERPRINT = /^[0-9a-f]{64}$/;
const id = z.string().min(1).max(ID_MAX_LENGTH);
const limit = z.number().int().nonnegative();

/**
 * Whether `value` can be a request id: the rule the `request_id` claim had, 1 to 200 characters.
 * It travels beside the signed token (internal-auth.ts, REQUEST_ID_METADATA_KEY), as a gRPC metadata
 * value, so in practice it is printable ASCII as well.
 */
export function isRequestId(value: unknown): value is string {
  return typeof value === "string" && value.length >= 1 && value.length <= ID_MAX_LENGTH;
}

/**
 * Whether `value` can be an Idempotency-Key: the rule the `idempotency.key` claim had, 1 to 255 characters.
 * It travels beside the signed token as a gRPC metadata value, so in practice it is printable ASCII as well.
 */
export function isIdempotencyKey(value: unknown): value is string {
  return typeof value === "string" && value.length >= 1 && value.length <= IDEMPOTENCY_KEY_MAX_LENGTH;
}

/** Whether `value` can be a request fingerprint: 64 lowercase hex digits, the rule the claim had. */
export function isFingerprint(value: unknown): value is string {
  return typeof value === "string" && FINGERPRINT.test(value);
}

/**
 * What the caller signs of a request context: everything but the request id (which changes with
 * every request and travels beside the token, so that one token serves many calls), the Idempotency-Key
 * and fingerprint of a write (beside the token too, for the same reason; only the caller organization of
 * its idempotency is signed) and the outcome (filled from the answer, never sent). A RequestContext fits.
 */
export type SignedContext = Omit<RequestContext, "requestId" | "outcome" | "idempotency"> & {
  idempotency?: SignedIdempotency;
};

/**
 * The wire form of a request context without its request id: the `ctx` claim of the signed token.
 * Strict: a value of the wrong type or an unknown credential kind makes the whole token malformed
 * (nothing is silently dropped: an absent limit or credential kind would mean "unrestricted" to a
 * service). Unknown extra fields are ignored, so a newer caller may add fields during a rolling
 * update (and a `request_id` left in the claim by an older caller is ignored too).
 */
export const wireContextSchema = z.object({
  organization_id: id.optional(),
  livemode: z.boolean().optional(),
  key_id: id.optional(),
  credential_kind: z.enum(["secret", "connector", "person", "authority"]).optional(),
  plan: z
    .object({
      plan_id: id,
      subscription_status: id,
      publish_limit: limit.optional(),
      unit_limit: limit.optional(),
      document_limit: limit.optional(),
      destructive_operation_cap: limit.optional(),
    })
    .optional(),
  // The caller organization alone (a keyed write; its key and fingerprint travel beside the token), or all
  // three (a caller of an earlier version). A key without its fingerprint, or the reverse, is malformed.
  idempotency: z
    .object({
      key: z.string().min(1).max(IDEMPOTENCY_KEY_MAX_LENGTH).optional(),
      fingerprint: z.string().regex(FINGERPRINT).optional(),
      caller_organization_id: id,
    })
    .refine((i) => (i.key === undefined) === (i.fingerprint === undefined))
    .optional(),
});

export type WireContext = z.infer<typeof wireContextSchema>;

/**
 * The wire form of what is signed of `ctx`: its request id, outcome, Idempotency-Key and fingerprint are left
 * out (of its idempotency, only the caller organization is signed).
 */
export function contextToWire(ctx: SignedContext): WireContext {
  const w: WireContext = {};
  if (ctx.organizationId !== undefined) w.organization_id = ctx.organizationId;
  if (ctx.livemode !== undefined) w.livemode = ctx.livemode;
  if (ctx.keyId !== undefined) w.key_id = ctx.keyId;
  if (ctx.credentialKind !== undefined) w.credential_kind = ctx.credentialKind;
  if (ctx.plan) {
    const p = ctx.plan;
    w.plan = { plan_id: p.planId, subscription_status: p.subscriptionStatus };
    if (p.publishLimit !== undefined) w.plan.publish_limit = p.publishLimit;
    if (p.unitLimit !== undefined) w.plan.unit_limit = p.unitLimit;
    if (p.documentLimit !== undefined) w.plan.document_limit = p.documentLimit;
    if (p.destructiveOperationCap !== undefined) w.plan.destructive_operation_cap = p.destructiveOperationCap;
  }
  if (ctx.idempotency) w.idempotency = { caller_organization_id: ctx.idempotency.callerOrganizationId };
  return w;
}

/** The signed context of a wire form; undefined when it does not match the schema. */
export function contextFromWire(value: unknown): SignedContext | undefined {
  const parsed = wireContextSchema.safeParse(value);
  if (!parsed.success) return undefined;
  const w = parsed.data;
  const ctx: SignedContext = {};
  if (w.organization_id !== undefined) ctx.organizationId = w.organization_id;
  if (w.livemode !== undefined) ctx.livemode = w.livemode;
  if (w.key_id !== undefined) ctx.keyId = w.key_id;
  if (w.credential_kind !== undefined) ctx.credentialKind = w.credential_kind;
  if (w.plan) {
    const p = w.plan;
    ctx.plan = { planId: p.plan_id, subscriptionStatus: p.subscription_status };
    if (p.publish_limit !== undefined) ctx.plan.publishLimit = p.publish_limit;
    if (p.unit_limit !== undefined) ctx.plan.unitLimit = p.unit_limit;
    if (p.document_limit !== undefined) ctx.plan.documentLimit = p.document_limit;
    if (p.destructive_operation_cap !== undefined)
      ctx.plan.destructiveOperationCap = p.destructive_operation_cap;
  }
  if (w.idempotency) {
    const i = w.idempotency;
    ctx.idempotency = { callerOrganizationId: i.caller_organization_id };
    if (i.key !== undefined && i.fingerprint !== undefined) {
      ctx.idempotency.key = i.key;
      ctx.idempotency.fingerprint = i.fingerprint;
    }
  }
  return ctx;
}

/**
 * A call's Idempotency-Key and fingerprint as they travel beside its token (metadata values, each
 * undefined when absent or sent twice). The kit's client sends both exactly when the context has an
 * idempotency; a call without either sends no entry at all (`beside` undefined).
 */
export interface IdempotencyBeside {
  key: string | undefined;
  fingerprint: string | undefined;
}

/**
 * The idempotency of one call: the signed caller organization with the key and fingerprint beside the
 * token, checked by the rules the claims had. `null` when they do not fit what was signed: an
 * idempotency signed and no valid key and fingerprint beside it, a key or fingerprint beside a token that
 * signed none, or (a token of an earlier caller, which signed them) a key or fingerprint beside it that
 * is not the signed one. Undefined for a call without an Idempotency-Key.
 */
export function idempotencyOf(
  signed: SignedIdempotency | undefined,
  beside: IdempotencyBeside | undefined,
): IdempotencyContext | undefined | null {
  if (!signed) return beside === undefined ? undefined : null;
  const { callerOrganizationId } = signed;
  if (signed.key !== undefined && signed.fingerprint !== undefined) {
    // Signed by an earlier caller: the signed key and fingerprint hold; anything beside them must agree.
    if (beside && (beside.key !== signed.key || beside.fingerprint !== signed.fingerprint)) return null;
    return { key: signed.key, fingerprint: signed.fingerprint, callerOrganizationId };
  }
  if (!beside || !isIdempotencyKey(beside.key) || !isFingerprint(beside.fingerprint)) return null;
  return { key: beside.key, fingerprint: beside.fingerprint, callerOrganizationId };
}

/**
 * One call's request context: `signed` (which may be shared by many calls, e.g. a cached
 * verification) with this call's request id and idempotency (idempotencyOf: required when `signed` has
 * one), in objects of its own, nested ones included, so nothing a handler does to its context reaches
 * another call.
 */
export function withRequestId(
  signed: SignedContext,
  requestId: string,
  idempotency?: IdempotencyContext,
): RequestContext {
  const ctx = { requestId, ...signed } as RequestContext;
  if (signed.plan) ctx.plan = { ...signed.plan };
  if (signed.idempotency) {
    if (!idempotency) throw new Error("a signed idempotency needs the call's key and fingerprint");
    ctx.idempotency = { ...idempotency };
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
