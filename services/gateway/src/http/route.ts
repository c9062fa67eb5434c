/**
 * What a route is: one HTTP operation of /v1 as data, with its handler attached. The router, the
 * scope check, the 405/Allow answers and the body limits are all derived from the table of routes
 * (src/routes.ts); none of them keeps a list of its own.
 */
import type { RequestContext } from "@dpp/kit";
import type { OrganizationAccess } from "../modules/identity/authenticator";
import type { KeyRecord } from "../modules/identity/identity.repository";
import type { Scope } from "../modules/identity/keys";

export type AuthMode =
  /** no credential looked at */
  | "none"
  /** anonymous allowed; a key that is sent is still checked */
  | "optional"
  /** any valid key */
  | "key"
  /** a valid key that reaches the {organization} in the path, with the route's scope */
  | "organization"
  /**
   * the grant endpoints: {organization} is a client; the key needs the route's
   * scope on its OWN organization (never through a grant) and its organization
   * must manage the client, or be the client (see Authenticator.resolveGrantTarget)
   */
  | "grantor";

/** A route as a description: everything but its handler. */
export interface RouteSpec {
  operationId: string;
  method: "GET" | "POST" | "PATCH" | "DELETE";
  /** OpenAPI-style path under /v1, e.g. /organizations/{organization}/passports/{id}. */
  path: string;
  auth: AuthMode;
  scope?: Scope;
  /** Whether the endpoint accepts an Idempotency-Key (the spec's "accepted"). */
  idempotent: boolean;
  /** Largest JSON body accepted; absent when the endpoint takes no body. */
  bodyLimitBytes?: number;
  /** The status of every successful answer. */
  successStatus: number;
  /**
   * Takes the conditional headers Expected-Version (a non-negative integer) and If-Match (exactly `*`); a
   * malformed one is 400 invalid_request before anything else (idempotency key, body) is looked at.
   */
  conditional?: boolean;
}

/**
 * Expected-Version of a `conditional` route, syntax already checked. If-Match (only `*`) is checked and asks
 * nothing more: every conditional operation needs the passport to exist.
 */
export interface Conditional {
  expectedVersion?: number;
}

/** What a handler is given: the request as parsed and checked by the middleware chain. */
export interface HandlerInput {
  params: Record<string, string>;
  query: Record<string, unknown>;
  body: unknown;
  ctx: RequestContext;
  /** The calling key (absent on routes without a credential). */
  key?: KeyRecord;
  /** The organization in the path, resolved for `organization` and `grantor` routes. */
  access?: OrganizationAccess;
  conditional?: Conditional;
}

/**
 * The answer's JSON body (sent with the route's successStatus) and any extra headers. A RawJson body (json.ts)
 * is sent as the text it holds.
 */
export interface HandlerResult {
  body: unknown;
  headers?: Record<string, string>;
}

/** A thin handler: read the input, call one downstream method, map the answer. */
export type Handler = (input: HandlerInput) => Promise<HandlerResult>;

export interface Route extends RouteSpec {
  handler: Handler;
}

/** One downstream API's part of the gateway: its routes, handlers attached (see src/modules/). */
export interface GatewayModule {
  name: string;
  routes: readonly Route[];
}

export const KiB = 1024;
export const MiB = 1024 * KiB;

/** /organizations/{organization} → /organizations/:organization (express syntax). */
export function expressPath(path: string): string {
  return path.replace(/\{(\w+)\}/g, ":$1");
}

/** Methods answered at each path, for the Allow header (HEAD comes with GET). */
export function allowedMethods(routes: readonly RouteSpec[], path: string): string[] {
  const methods = new Set<string>();
  for (const r of routes)
    if (r.path === path) {
      methods.add(r.method);
      if (r.method === "GET") methods.add("HEAD");
    }
  return [...methods].sort();
}
