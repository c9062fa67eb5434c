/**
 * What a route is: one HTTP operation of /v1 as data, with its handler attached. The router, the
 * scope check, the 405/Allow answers and the body limits are all derived from the table of routes
 * (src/routes.ts); none of them keeps a list of its own.
 */
import type { Request, Response } from "express";
import { ApiError } from "@dpp/contract";
import type { RequestContext } from "@dpp/kit";
import type { OrganizationAccess } from "../modules/identity/authenticator";
import type { KeyRecord } from "../modules/identity/identity.repository";
import type { Scope } from "../modules/identity/keys";
import type { Conditional, RequestLocals } from "./middleware/locals";

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
  | "grantor"
  /**
   * an authority token (never an API key) of the {organization} in the path: an inspector's read of that
   * organization's authority-tier files (docs/decisions/0058); no scope
   */
  | "authority";

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
  /** The status of a successful answer (the only one, unless `alsoSuccessStatuses` names others). */
  successStatus: number;
  /**
   * Other success statuses the operation's contract declares, that its handler chooses with `HandlerResult.status`
   * (e.g. 200 beside a create's 201 when the thing already existed). A handler answering a status the route does
   * not declare is a bug: 500.
   */
  alsoSuccessStatuses?: readonly number[];
  /**
   * The query parameters the operation reads (absent: none), as its OpenAPI operation lists them. Any other
   * parameter, `status[]` or `type[x]` included, is 400 invalid_request (middleware/inputs.ts): a filter that is
   * not read must not be answered as if it were.
   */
  query?: Readonly<Record<string, QueryParameter>>;
  /**
   * Takes the conditional headers Expected-Version (a non-negative integer) and If-Match (exactly `*`); a
   * malformed one is 400 invalid_request before anything else (idempotency key, body) is looked at.
   */
  conditional?: boolean;
}

/** A query parameter of an operation: given at most once, or repeated for several values (`type=a&type=b`). */
export type QueryParameter = "single" | "repeatable";

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
 * is sent as the text it holds, a RawJsonBytes body as its bytes.
 */
export interface HandlerResult {
  body: unknown;
  headers?: Record<string, string>;
  /** The success status, when not the route's successStatus: one of its alsoSuccessStatuses. */
  status?: number;
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

/**
 * One step of a route's chain (src/http/middleware/): it returns when it is done, or a promise when it waits
 * for something; a refusal is thrown (or the promise rejected). A step that does not apply to a route is not
 * made at all, so the route's chain leaves it out.
 */
export type Step = (req: Request, res: Response, l: RequestLocals) => void | Promise<void>;

/** A path of the table as the router found it: what answers each method there, and the Allow list. */
export interface PathTarget<T> {
  /** OpenAPI-style, as in the table. */
  path: string;
  /** What answers each method of the table at this path (HEAD: see `forMethod`). */
  methods: ReadonlyMap<string, T>;
  /** The Allow header's value (HEAD with GET, sorted). */
  allow: string;
  /** The same as a list, for details.allow. */
  allowList: readonly string[];
}

/** What answers `method` at a path: the route of that method; a HEAD is answered as a GET. */
export function forMethod<T>(target: PathTarget<T>, method: string): T | undefined {
  return target.methods.get(method) ?? (method === "HEAD" ? target.methods.get("GET") : undefined);
}

interface Compiled<T> extends PathTarget<T> {
  /** Place in the table: when two paths match a request, the earlier one answers it. */
  order: number;
  /** Position of each path parameter among the segments, and its name. */
  params: readonly (readonly [number, string])[];
}

interface Node<T> {
  statics: Map<string, Node<T>>;
  param?: Node<T>;
  target?: Compiled<T>;
}

/**
 * The paths of /v1, precompiled from the route table into a tree of path segments: a request is matched with one
 * walk down the tree, whatever the size of the table. The rules are the ones the table always had: segments match
 * case-sensitively, one trailing slash is ignored (never two), a parameter is one non-empty segment, decoded with
 * decodeURIComponent when it holds a `%` (400 invalid_request when it is not percent-encoded UTF-8), and when
 * several paths match, the first in the table answers, for every method (405 there rather than another path).
 */
export class PathRouter<T> {
  private readonly root: Node<T> = { statics: new Map() };

  constructor(routes: readonly { path: string; method: string; target: T }[]) {
    const byPath = new Map<string, Map<string, T>>();
    for (const r of routes) {
      let methods = byPath.get(r.path);
      if (!methods) byPath.set(r.path, (methods = new Map()));
      if (methods.has(r.method)) throw new Error(`the route table has ${r.method} ${r.path} twice`);
      methods.set(r.method, r.target);
    }
    let order = 0;
    for (const [path, methods] of byPath) {
      const allowList = allowedMethods(
        [...methods.keys()].map((method) => ({ method, path }) as RouteSpec),
        path,
      );
      const params: [number, string][] = [];
      let node = this.root;
      path
        .split("/")
        .slice(1)
        .forEach((segment, i) => {
          const name = /^\{(\w+)\}$/.exec(segment)?.[1];
          if (name !== undefined) {
            params.push([i, name]);
            node = node.param ??= { statics: new Map() };
            return;
          }
          if (segment === "" || /[{}]/.test(segment))
            throw new Error(`the route path ${path} is not supported`);
          let next = node.statics.get(segment);
          if (!next) node.statics.set(segment, (next = { statics: new Map() }));
          node = next;
        });
      node.target ??= { path, methods, allow: allowList.join(", "), allowList, order: order++, params };
    }
  }

  /** What the path `path` (under /v1, without the query) names, with its decoded parameters; undefined: nothing. */
  match(path: string): { target: PathTarget<T>; params: Record<string, string> } | undefined {
    if (path.charCodeAt(0) !== 47 /* / */) return undefined;
    let end = path.length;
    if (end > 1 && path.charCodeAt(end - 1) === 47) end--;
    const segments = path.slice(1, end).split("/");
    const target = find(this.root, segments, 0);
    if (!target) return undefined;
    const params: Record<string, string> = {};
    for (const [i, name] of target.params) params[name] = decodeSegment(segments[i]!);
    return { target, params };
  }
}

function find<T>(node: Node<T>, segments: readonly string[], i: number): Compiled<T> | undefined {
  if (i === segments.length) return node.target;
  const segment = segments[i]!;
  const next = node.statics.get(segment);
  let best = next && find(next, segments, i + 1);
  if (node.param && segment !== "") {
    const other = find(node.param, segments, i + 1);
    if (other && (!best || other.order < best.order)) best = other;
  }
  return best;
}

/** A path parameter as sent, percent-decoded; 400 when it is not percent-encoded UTF-8. */
function decodeSegment(segment: string): string {
  if (!segment.includes("%")) return segment;
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new ApiError("invalid_request", "The request could not be understood.", {});
  }
}
