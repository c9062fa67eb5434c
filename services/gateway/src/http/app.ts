import { randomBytes } from "node:crypto";
import express, { type NextFunction, type Request, type Response } from "express";
import { ApiError, toEnvelope, type Logger, type RequestContext } from "@dpp/kit";
import { allowedMethods, expressPath, ROUTES, type RouteSpec } from "../routes";
import type { Authenticator, OrganizationAccess } from "../modules/identity/authenticator";
import type { RateLimiter } from "../ratelimit/limiter";
import {
  fingerprintOf,
  IDEMPOTENCY_HEADER,
  isRecordable,
  readIdempotencyKey,
  REPLAYED_HEADER,
  type IdempotencyStore,
  type RecordedResponse,
} from "../idempotency/idempotency";
import type { KeyRecord } from "../modules/identity/identity.repository";
import type { Conditional, Handler } from "./handlers";
import { docsPage } from "./docs";

export interface AppDeps {
  authenticator: Authenticator;
  handlers: Record<string, Handler>;
  log: Logger;
  docsBaseUrl: string;
  trustProxy: number;
  /** Readiness: resolves when the gateway can serve (its database answers). */
  ready: () => Promise<void>;
  routes?: readonly RouteSpec[];
  /** Rate limits (absent: none, e.g. in tests of other concerns). */
  rateLimiter?: RateLimiter;
  /** Idempotency records for routes marked `idempotent` (absent: keys are checked but not honoured). */
  idempotency?: IdempotencyStore;
}

interface Locals {
  requestId: string;
  key?: KeyRecord;
  access?: OrganizationAccess;
  /** Syntax-checked Idempotency-Key of an idempotent route. */
  idempotencyKey?: string;
  /** The claimed idempotency record, until its answer is recorded or released. */
  idempotencyClaim?: number;
  /** Syntax-checked conditional headers of a `conditional` route. */
  conditional?: Conditional;
}

const locals = (res: Response) => res.locals as Locals;

export function newRequestId(): string {
  return `req_${randomBytes(12).toString("hex")}`;
}

function hasBody(req: Request): boolean {
  const len = req.headers["content-length"];
  return req.headers["transfer-encoding"] !== undefined || (len !== undefined && len !== "0");
}

export function createApp(deps: AppDeps): express.Express {
  const routes = deps.routes ?? ROUTES;
  const app = express();
  app.disable("x-powered-by");
  app.set("etag", false);
  app.set("trust proxy", deps.trustProxy);
  app.set("query parser", "simple");

  // Every response carries Request-Id; the same value is the envelope's request_id.
  app.use((_req, res, next) => {
    const id = newRequestId();
    locals(res).requestId = id;
    res.setHeader("Request-Id", id);
    next();
  });

  app.use((req, res, next) => {
    const started = process.hrtime.bigint();
    res.on("finish", () => {
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      const level = res.statusCode >= 500 ? "error" : res.statusCode >= 400 ? "warn" : "info";
      deps.log[level](
        {
          request_id: locals(res).requestId,
          method: req.method,
          path: req.path,
          status: res.statusCode,
          ms: Math.round(ms * 10) / 10,
          key_id: locals(res).key?.id,
        },
        "request",
      );
    });
    next();
  });

  // The API reference (GET /v1/openapi.json is the raw document, in the route table).
  app.get("/docs", docsPage);
  app.get("/healthz", (_req, res) => {
    res.json({ status: "ok" });
  });
  app.get("/readyz", (_req, res, next) => {
    deps
      .ready()
      .then(() => res.json({ status: "ready" }))
      .catch(() => next(new ApiError("internal_error", "Not ready.", { reason: "not_ready" })));
  });

  const v1 = express.Router({ caseSensitive: true, strict: false });
  const paths = [...new Set(routes.map((r) => r.path))];
  for (const path of paths) {
    const route = v1.route(expressPath(path));
    for (const spec of routes.filter((r) => r.path === path)) {
      const handler = deps.handlers[spec.operationId];
      if (!handler) throw new Error(`no handler for ${spec.operationId}`);
      const method = spec.method.toLowerCase() as "get" | "post" | "patch" | "delete";
      route[method](
        authenticate(spec, deps.authenticator),
        rateLimit(deps.rateLimiter),
        conditionalHeaders(spec),
        idempotencyKeySyntax(spec),
        ...bodyParsing(spec),
        idempotencyClaim(spec, deps),
        run(spec, handler, deps),
      );
    }
    const allow = allowedMethods(routes, path).join(", ");
    route.all((req, _res, next) =>
      next(
        new ApiError(
          "method_not_allowed",
          `${req.method} is not answered here; allowed: ${allow}.`,
          { allow: allow.split(", ") },
          {
            Allow: allow,
          },
        ),
      ),
    );
  }
  v1.use((req, _res, next) =>
    next(
      new ApiError("resource_not_found", `No endpoint at ${req.method} /v1${req.path}.`, {
        path: `/v1${req.path}`,
      }),
    ),
  );
  app.use("/v1", v1);
  app.use((req, _res, next) =>
    next(
      new ApiError(
        "resource_not_found",
        `No endpoint at ${req.method} ${req.path}; the API lives under /v1.`,
        {
          path: req.path,
        },
      ),
    ),
  );
  app.use(errorHandler(deps));
  return app;
}

function authenticate(spec: RouteSpec, auth: Authenticator) {
  return async (req: Request, res: Response, next: NextFunction) => {
    if (spec.auth === "none") return next();
    const header = req.headers.authorization;
    if (spec.auth === "optional" && header === undefined) return next();
    const key = await auth.authenticate(header);
    locals(res).key = key;
    if (spec.auth === "organization") {
      const access = await auth.resolveOrganization(key, req.params.organization as string);
      if (spec.scope) auth.requireScope(access, spec.scope);
      locals(res).access = access;
    } else if (spec.auth === "grantor") {
      // Grant endpoints: the key's scopes on its own organization, never a grant (see resolveGrantTarget).
      const access = await auth.resolveGrantTarget(key, req.params.organization as string);
      if (spec.scope) auth.requireScope(access, spec.scope);
      locals(res).access = access;
    }
    next();
  };
}

/** Per-key (or, without a key, per-client-address) limits; RateLimit fields on every limited response. */
function rateLimit(limiter: RateLimiter | undefined) {
  return async (req: Request, res: Response, next: NextFunction) => {
    if (!limiter) return next();
    const key = locals(res).key;
    const decision = key
      ? await limiter.consume("key", key.id)
      : await limiter.consume("anonymous", req.ip ?? req.socket.remoteAddress ?? "unknown");
    for (const [k, v] of Object.entries(decision.headers)) res.setHeader(k, v);
    next();
  };
}

/**
 * Expected-Version (a non-negative integer) and If-Match (exactly `*`; an ETag or anything else is refused) on
 * `conditional` routes: a malformed one is 400 invalid_request before any idempotency key is claimed or any body
 * read, so it is never recorded and the client fixes the header and retries under the same key.
 */
function conditionalHeaders(spec: RouteSpec) {
  return (req: Request, res: Response, next: NextFunction) => {
    if (!spec.conditional) return next();
    const bad = (header: string, rule: string, message: string) =>
      next(new ApiError("invalid_request", message, { issues: [{ source: { header }, rule, message }] }));
    const conditional: Conditional = { ifMatchAny: false };
    const ev = req.headersDistinct["expected-version"];
    if (ev !== undefined) {
      const v = ev.length === 1 ? ev[0]!.trim() : "";
      if (!/^\d{1,9}$/.test(v))
        return bad(
          "Expected-Version",
          "non_negative_integer",
          "Expected-Version must be one non-negative integer: the passport version read earlier.",
        );
      conditional.expectedVersion = Number(v);
    }
    const im = req.headersDistinct["if-match"];
    if (im !== undefined) {
      if (im.length !== 1 || im[0]!.trim() !== "*")
        return bad(
          "If-Match",
          "asterisk_only",
          "If-Match accepts only `*`; use Expected-Version with the passport's version instead of an ETag.",
        );
      conditional.ifMatchAny = true;
    }
    locals(res).conditional = conditional;
    next();
  };
}

/** 400 for a malformed Idempotency-Key before anything is claimed (the client retries with the same key). */
function idempotencyKeySyntax(spec: RouteSpec) {
  return (req: Request, res: Response, next: NextFunction) => {
    if (!spec.idempotent) return next();
    const values = req.headersDistinct[IDEMPOTENCY_HEADER];
    locals(res).idempotencyKey = readIdempotencyKey(values?.length === 1 ? values[0] : values);
    next();
  };
}

/** The normalised request path of a route: /v1 + the spec path with the parameters filled in. */
function canonicalPath(spec: RouteSpec, params: Record<string, string>): string {
  return (
    "/v1" + spec.path.replace(/\{(\w+)\}/g, (_m, name: string) => encodeURIComponent(params[name] ?? ""))
  );
}

/** Claims the key (in flight), or replays the recorded answer, or refuses (conflict / busy). */
function idempotencyClaim(spec: RouteSpec, deps: AppDeps) {
  return async (req: Request, res: Response, next: NextFunction) => {
    const l = locals(res);
    if (!spec.idempotent || !deps.idempotency || l.idempotencyKey === undefined || !l.key) return next();
    const path = canonicalPath(spec, req.params as Record<string, string>);
    const result = await deps.idempotency.claim(
      {
        organizationId: l.access?.organization.id ?? "",
        livemode: l.key.livemode,
        callerOrganizationId: l.key.organization_id,
        key: l.idempotencyKey,
      },
      fingerprintOf(req.method, path, req.body),
      { method: req.method, path, requestId: l.requestId, keyId: l.key.id },
    );
    if (result.kind === "replay") {
      const r = result.response;
      for (const [k, v] of Object.entries(r.headers)) res.setHeader(k, v);
      res.setHeader(REPLAYED_HEADER, "true");
      res.status(r.status).type("application/json").send(r.body);
      return;
    }
    l.idempotencyClaim = result.id;
    next();
  };
}

/** Records the answer against the claimed key (before it is sent), or releases the key. */
async function settleIdempotency(
  deps: AppDeps,
  res: Response,
  outcome: { record: RecordedResponse } | { release: true },
): Promise<void> {
  const l = locals(res);
  const id = l.idempotencyClaim;
  if (id === undefined || !deps.idempotency) return;
  l.idempotencyClaim = undefined;
  try {
    if ("record" in outcome) await deps.idempotency.finish(id, outcome.record);
    else await deps.idempotency.release(id);
  } catch (err) {
    deps.log.error({ err, request_id: l.requestId }, "could not settle the idempotency record; releasing it");
    await deps.idempotency.release(id).catch(() => undefined);
  }
}

/** 415 for a body that is not JSON, then the JSON parser with the route's ceiling. */
function bodyParsing(spec: RouteSpec) {
  if (spec.bodyLimitBytes === undefined) return [];
  return [
    (req: Request, _res: Response, next: NextFunction) => {
      if (hasBody(req) && !req.is("application/json"))
        return next(
          new ApiError(
            "unsupported_media_type",
            "Send the body as JSON with Content-Type: application/json.",
            {
              content_type: req.headers["content-type"] ?? null,
            },
          ),
        );
      next();
    },
    express.json({ limit: spec.bodyLimitBytes, strict: true, type: "application/json" }),
  ];
}

function contextOf(res: Response): RequestContext {
  const l = locals(res);
  const ctx: RequestContext = { requestId: l.requestId };
  if (l.key) {
    ctx.keyId = l.key.id;
    ctx.credentialKind = l.key.kind;
    ctx.livemode = l.key.livemode;
  }
  if (l.access) {
    ctx.organizationId = l.access.organization.id;
    ctx.plan = l.access.plan;
  }
  return ctx;
}

function run(spec: RouteSpec, handler: Handler, deps: AppDeps) {
  return async (req: Request, res: Response) => {
    const l = locals(res);
    const out = await handler({
      params: req.params as Record<string, string>,
      query: req.query as Record<string, unknown>,
      body: req.body,
      ctx: contextOf(res),
      key: l.key,
      access: l.access,
      conditional: l.conditional,
    });
    const status = out.status ?? spec.successStatus;
    const text = JSON.stringify(out.body);
    await settleIdempotency(deps, res, { record: { status, body: text, headers: out.headers ?? {} } });
    if (out.headers) for (const [k, v] of Object.entries(out.headers)) res.setHeader(k, v);
    res.status(status).type("application/json").send(text);
  };
}

interface BodyParserError {
  type?: string;
  status?: number;
  limit?: number;
}

/** The one place where errors become envelopes. */
function errorHandler(deps: AppDeps) {
  return (err: unknown, _req: Request, res: Response, _next: NextFunction) => {
    const requestId = locals(res).requestId ?? newRequestId();
    let apiErr: ApiError;
    if (err instanceof ApiError) {
      apiErr = err;
      if (apiErr.status >= 500)
        deps.log.error({ request_id: requestId, code: apiErr.code, details: apiErr.details }, apiErr.message);
    } else {
      const e = err as BodyParserError;
      switch (e?.type) {
        case "entity.too.large":
          apiErr = new ApiError(
            "payload_too_large",
            `The request body is larger than this endpoint accepts (${e.limit} bytes).`,
            { limit_bytes: e.limit },
          );
          break;
        case "entity.parse.failed":
          apiErr = new ApiError("invalid_request", "The request body is not valid JSON.", {
            issues: [{ source: { pointer: "" }, rule: "json_syntax" }],
          });
          break;
        case "encoding.unsupported":
        case "charset.unsupported":
          apiErr = new ApiError("unsupported_media_type", "Send the body as UTF-8 JSON.", {});
          break;
        case "request.aborted":
        case "request.size.invalid":
        case "stream.encoding.set":
          apiErr = new ApiError("invalid_request", "The request body could not be read.", { reason: e.type });
          break;
        default:
          if (e?.status && e.status >= 400 && e.status < 500) {
            apiErr = new ApiError("invalid_request", "The request could not be understood.", {});
          } else {
            deps.log.error({ err, request_id: requestId }, "unhandled error");
            apiErr = new ApiError("internal_error");
          }
      }
    }
    if (res.headersSent) return;
    const text = JSON.stringify(toEnvelope(apiErr, requestId, deps.docsBaseUrl));
    const send = () => {
      if (res.headersSent) return;
      for (const [k, v] of Object.entries(apiErr.headers)) res.setHeader(k, v);
      res.status(apiErr.status).type("application/json").send(text);
    };
    if (locals(res).idempotencyClaim === undefined) return send();
    const outcome = isRecordable(err)
      ? { record: { status: apiErr.status, body: text, headers: apiErr.headers } }
      : ({ release: true } as const);
    void settleIdempotency(deps, res, outcome).finally(send);
  };
}
