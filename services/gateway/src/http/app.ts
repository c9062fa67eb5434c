import { randomBytes } from "node:crypto";
import express, { type NextFunction, type Request, type Response } from "express";
import { ApiError, toEnvelope, type Logger, type RequestContext } from "@dpp/kit";
import { allowedMethods, expressPath, ROUTES, type RouteSpec } from "../routes";
import type { Authenticator, OrganizationAccess } from "../auth/authenticator";
import type { KeyRecord } from "../store/identity.repository";
import type { Handler } from "./handlers";

export interface AppDeps {
  authenticator: Authenticator;
  handlers: Record<string, Handler>;
  log: Logger;
  docsBaseUrl: string;
  trustProxy: number;
  /** Readiness: resolves when the gateway can serve (its database answers). */
  ready: () => Promise<void>;
  routes?: readonly RouteSpec[];
}

interface Locals {
  requestId: string;
  key?: KeyRecord;
  access?: OrganizationAccess;
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
      route[method](authenticate(spec, deps.authenticator), ...bodyParsing(spec), run(spec, handler));
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
    }
    next();
  };
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

function run(spec: RouteSpec, handler: Handler) {
  return async (req: Request, res: Response) => {
    const l = locals(res);
    const out = await handler({
      params: req.params as Record<string, string>,
      query: req.query as Record<string, unknown>,
      body: req.body,
      ctx: contextOf(res),
      key: l.key,
      access: l.access,
    });
    if (out.headers) for (const [k, v] of Object.entries(out.headers)) res.setHeader(k, v);
    res.status(out.status ?? spec.successStatus).json(out.body);
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
    for (const [k, v] of Object.entries(apiErr.headers)) res.setHeader(k, v);
    res.status(apiErr.status).json(toEnvelope(apiErr, requestId, deps.docsBaseUrl));
  };
}
