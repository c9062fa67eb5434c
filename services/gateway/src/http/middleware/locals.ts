/**
 * What the steps of a request learn about it, kept in res.locals for the steps after it: one object of a fixed
 * shape per request (RequestLocals), made when the request arrives (observe.ts).
 */
import type { Response } from "express";
import { randomHex } from "@dpp/contract";
import type { IdempotencyContext, RequestContext } from "@dpp/kit";
import type { OrganizationAccess } from "../../modules/identity/authenticator";
import type { AuthorityTokenRecord, KeyRecord } from "../../modules/identity/identity.repository";

/**
 * Expected-Version of a `conditional` route, syntax already checked. If-Match (only `*`) is checked and asks
 * nothing more: every conditional operation needs the passport to exist.
 */
export interface Conditional {
  expectedVersion?: number;
}

export interface Locals {
  requestId: string;
  key?: KeyRecord;
  /** The authority token of an `authority` route (never set with `key`). */
  authority?: AuthorityTokenRecord;
  access?: OrganizationAccess;
  /** Syntax-checked Idempotency-Key of an idempotent route. */
  idempotencyKey?: string;
  /** The key scoped and the request fingerprinted, for the owning service. */
  idempotency?: IdempotencyContext;
  /** Syntax-checked conditional headers of a `conditional` route. */
  conditional?: Conditional;
}

/**
 * The headers the steps look at, from one pass over the raw headers (inputs.ts): every value of the ones read
 * by name, and whether any value holds text that is refused.
 */
export interface HeaderFacts {
  authorization: string[] | undefined;
  expectedVersion: string[] | undefined;
  ifMatch: string[] | undefined;
  /** Some header value holds text that is refused (inputs.ts names it). */
  refusedText: boolean;
}

/** Locals with every field present from the start, so that every request's object has the same shape. */
export class RequestLocals implements Locals {
  key?: KeyRecord = undefined;
  authority?: AuthorityTokenRecord = undefined;
  access?: OrganizationAccess = undefined;
  idempotencyKey?: string = undefined;
  idempotency?: IdempotencyContext = undefined;
  conditional?: Conditional = undefined;
  /** The headers read (inputs.ts), once. */
  headers?: HeaderFacts = undefined;
  /** The route pattern the request matched ("/v1/organizations/{organization}/passports"), for the metrics. */
  route?: string = undefined;
  /** When the request arrived (performance.now()), for the log line. */
  readonly started: number;

  constructor(readonly requestId: string) {
    this.started = performance.now();
  }
}

export const locals = (res: Response) => res.locals as Locals;

/** A request id: 12 random bytes as hex, from the process's pool of random bytes (ids.ts). */
export function newRequestId(): string {
  return `req_${randomHex(12)}`;
}

/**
 * The request context carried to the services: request id, key, mode, organization, plan and idempotency;
 * `outcome` is filled from the services' answers (a replay).
 */
export function contextOf(res: Response): RequestContext {
  const l = locals(res);
  const ctx: RequestContext = { requestId: l.requestId, outcome: {} };
  if (l.idempotency) ctx.idempotency = l.idempotency;
  if (l.key) {
    ctx.keyId = l.key.id;
    ctx.credentialKind = l.key.kind;
    ctx.livemode = l.key.livemode;
  }
  if (l.authority) {
    // An authority reads as itself: its token's id, its kind, the one organization and mode it is bound to.
    ctx.keyId = l.authority.id;
    ctx.credentialKind = "authority";
    ctx.livemode = l.authority.livemode;
    ctx.organizationId = l.authority.organization_id;
  }
  if (l.access) {
    ctx.organizationId = l.access.organization.id;
    ctx.plan = l.access.plan;
  }
  return ctx;
}
