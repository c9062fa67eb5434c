/**
 * The route table: every HTTP operation of /v1 as data. The router, the scope
 * check, the 405/Allow answers and the body limits are all derived from it;
 * none of them keeps a list of its own.
 */
import type { Scope } from "./modules/identity/keys";

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
  /**
   * Takes the conditional headers Expected-Version (a non-negative integer) and If-Match (exactly `*`); a
   * malformed one is 400 invalid_request before anything else (idempotency key, body) is looked at.
   */
  conditional?: boolean;
}

export const KiB = 1024;
export const MiB = 1024 * KiB;

export const ROUTES: readonly RouteSpec[] = [
  {
    // This API's OpenAPI document (services/gateway/openapi/openapi.yaml); no credential.
    operationId: "getOpenApiDocument",
    method: "GET",
    path: "/openapi.json",
    auth: "none",
    idempotent: false,
    successStatus: 200,
  },
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
    operationId: "createGrant",
    method: "POST",
    path: "/organizations/{organization}/grants",
    auth: "grantor",
    scope: "keys:admin",
    idempotent: false,
    bodyLimitBytes: 16 * KiB,
    successStatus: 201,
  },
  {
    operationId: "revokeGrant",
    method: "DELETE",
    path: "/organizations/{organization}/grants/{keyId}",
    auth: "grantor",
    scope: "keys:admin",
    idempotent: false,
    successStatus: 200,
  },
  {
    operationId: "listCapabilities",
    method: "GET",
    path: "/organizations/{organization}/capabilities",
    auth: "organization",
    scope: "passports:read",
    idempotent: false,
    rpc: "dpp.passport.v1.PassportService/GetUsage",
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
    operationId: "updatePassport",
    method: "PATCH",
    path: "/organizations/{organization}/passports/{id}",
    auth: "organization",
    scope: "passports:write",
    idempotent: true,
    bodyLimitBytes: 1 * MiB,
    rpc: "dpp.passport.v1.PassportService/UpdatePassport",
    successStatus: 200,
    conditional: true,
  },
  {
    operationId: "publishPassport",
    method: "POST",
    path: "/organizations/{organization}/passports/{id}/publish",
    auth: "organization",
    scope: "passports:write",
    idempotent: true,
    bodyLimitBytes: 4 * KiB,
    rpc: "dpp.passport.v1.PassportService/PublishPassport",
    successStatus: 200,
    conditional: true,
  },
  {
    operationId: "unpublishPassport",
    method: "POST",
    path: "/organizations/{organization}/passports/{id}/unpublish",
    auth: "organization",
    scope: "passports:write",
    idempotent: true,
    bodyLimitBytes: 1 * KiB,
    rpc: "dpp.passport.v1.PassportService/UnpublishPassport",
    successStatus: 200,
    conditional: true,
  },
  {
    // Not shaped by the spec: a write like unpublish, so it takes an Idempotency-Key and Expected-Version.
    operationId: "trashPassport",
    method: "POST",
    path: "/organizations/{organization}/passports/{id}/trash",
    auth: "organization",
    scope: "passports:write",
    idempotent: true,
    bodyLimitBytes: 1 * KiB,
    rpc: "dpp.passport.v1.PassportService/TrashPassport",
    successStatus: 200,
    conditional: true,
  },
  {
    operationId: "restorePassport",
    method: "POST",
    path: "/organizations/{organization}/passports/{id}/restore",
    auth: "organization",
    scope: "passports:write",
    idempotent: true,
    bodyLimitBytes: 1 * KiB,
    rpc: "dpp.passport.v1.PassportService/RestorePassport",
    successStatus: 200,
    conditional: true,
  },
  {
    // Changes no passport (it may keep a validation record): safe to repeat, so no Idempotency-Key.
    operationId: "validatePassport",
    method: "POST",
    path: "/organizations/{organization}/passports/{id}/validate",
    auth: "organization",
    scope: "passports:write",
    idempotent: false,
    bodyLimitBytes: 1 * KiB,
    rpc: "dpp.passport.v1.PassportService/ValidatePassport",
    successStatus: 200,
  },
  {
    operationId: "getPassportLinks",
    method: "GET",
    path: "/organizations/{organization}/passports/{id}/links",
    auth: "organization",
    scope: "passports:read",
    idempotent: false,
    rpc: "dpp.passport.v1.PassportService/GetPassportLinks",
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
