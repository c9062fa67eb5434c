/**
 * The route table: every HTTP operation of /v1 as data. The router, the scope
 * check, the 405/Allow answers and the body limits are all derived from it;
 * none of them keeps a list of its own.
 */
import type { Scope } from "./auth/keys";

export type AuthMode =
  /** no credential looked at */
  | "none"
  /** anonymous allowed; a key that is sent is still checked */
  | "optional"
  /** any valid key */
  | "key"
  /** a valid key that reaches the {organization} in the path, with the route's scope */
  | "organization";

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
  /** The gRPC method the gateway calls. */
  rpc?: string;
  successStatus: number;
}

export const KiB = 1024;
export const MiB = 1024 * KiB;

export const ROUTES: readonly RouteSpec[] = [
  {
    operationId: "listCategories",
    method: "GET",
    path: "/categories",
    auth: "optional",
    idempotent: false,
    rpc: "dpp.passport.v1.PassportService/ListCategories",
    successStatus: 200,
  },
  {
    operationId: "getCategorySchema",
    method: "GET",
    path: "/categories/{category}/schema",
    auth: "optional",
    idempotent: false,
    rpc: "dpp.passport.v1.PassportService/GetCategorySchema",
    successStatus: 200,
  },
  {
    operationId: "whoami",
    method: "GET",
    path: "/whoami",
    auth: "key",
    idempotent: false,
    successStatus: 200,
  },
  {
    operationId: "listOrganizations",
    method: "GET",
    path: "/organizations",
    auth: "key",
    idempotent: false,
    successStatus: 200,
  },
  {
    operationId: "listPassports",
    method: "GET",
    path: "/organizations/{organization}/passports",
    auth: "organization",
    scope: "passports:read",
    idempotent: false,
    rpc: "dpp.passport.v1.PassportService/ListPassports",
    successStatus: 200,
  },
  {
    operationId: "createPassport",
    method: "POST",
    path: "/organizations/{organization}/passports",
    auth: "organization",
    scope: "passports:write",
    idempotent: true,
    bodyLimitBytes: 1 * MiB,
    rpc: "dpp.passport.v1.PassportService/CreatePassport",
    successStatus: 201,
  },
  {
    operationId: "getPassport",
    method: "GET",
    path: "/organizations/{organization}/passports/{id}",
    auth: "organization",
    scope: "passports:read",
    idempotent: false,
    rpc: "dpp.passport.v1.PassportService/GetPassport",
    successStatus: 200,
  },
  {
    operationId: "listEvents",
    method: "GET",
    path: "/organizations/{organization}/events",
    auth: "organization",
    scope: "events:read",
    idempotent: false,
    rpc: "dpp.events.v1.EventsService/ListEvents",
    successStatus: 200,
  },
];

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
