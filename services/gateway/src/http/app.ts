/**
 * The HTTP app: probes, then /v1 routed from the route table (src/routes.ts). Each route runs the same
 * chain (middleware/): authenticate the key → rate limit (every later answer counts) → path, query and
 * header hygiene → organization and scope → conditional headers → Idempotency-Key syntax → media type
 * and the strict JSON body with the route's limit → idempotency scope → its handler. Unknown methods
 * answer 405 with Allow, unknown paths 404; one error handler builds every error envelope. Every
 * response carries the security headers of middleware/security.ts.
 */
import express from "express";
import { ApiError } from "@dpp/contract";
import { type Logger } from "@dpp/kit";
import type { Authenticator } from "../modules/identity/authenticator";
import type { RateLimiter } from "../ratelimit/limiter";
import { OPENAPI_DOCUMENT } from "../openapi.generated";
import { allowedMethods, expressPath, type Route } from "./route";
import { docsPage } from "./docs";
import { authenticate, authorize } from "./middleware/authenticate";
import { bodyParsing } from "./middleware/body";
import { conditionalHeaders } from "./middleware/conditional";
import { dispatch } from "./middleware/dispatch";
import { errorHandler } from "./middleware/errors";
import { idempotencyKeySyntax, idempotencyScope } from "./middleware/idempotency";
import { inputHygiene } from "./middleware/inputs";
import { requestId, requestLog } from "./middleware/observe";
import { rateLimit } from "./middleware/rate-limit";
import { answerCached, etagOf, securityHeaders } from "./middleware/security";

/** The ETag of GET /v1/openapi.json (the route answers the generated document as is). */
const OPENAPI_ETAG = etagOf(JSON.stringify(OPENAPI_DOCUMENT));

export interface AppDeps {
  authenticator: Authenticator;
  /** The route table, handlers attached (routeTable() in src/routes.ts). */
  routes: readonly Route[];
  log: Logger;
  docsBaseUrl: string;
  trustProxy: number;
  /** Readiness: resolves when the gateway can serve (its database answers). */
  ready: () => Promise<void>;
  /** Rate limits (absent: none, e.g. in tests of other concerns). */
  rateLimiter?: RateLimiter;
}

export function createApp(deps: AppDeps): express.Express {
  const { routes } = deps;
  const app = express();
  app.disable("x-powered-by");
  app.set("etag", false);
  app.set("trust proxy", deps.trustProxy);
  app.set("query parser", "simple");

  app.use(requestId());
  app.use(securityHeaders());
  app.use(requestLog(deps.log));

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

  // The public document is cacheable: ETag, Cache-Control and 304 before the route answers it.
  app.get("/v1/openapi.json", (req, res, next) => {
    if (!answerCached(req, res, OPENAPI_ETAG)) next();
  });

  const v1 = express.Router({ caseSensitive: true, strict: false });
  const paths = [...new Set(routes.map((r) => r.path))];
  for (const path of paths) {
    const route = v1.route(expressPath(path));
    for (const spec of routes.filter((r) => r.path === path)) {
      const method = spec.method.toLowerCase() as "get" | "post" | "patch" | "delete";
      // A step that does not apply to the route (e.g. Idempotency-Key on a GET) is left out of its chain.
      route[method](
        ...authenticate(spec, deps.authenticator, deps.rateLimiter),
        ...rateLimit(deps.rateLimiter),
        inputHygiene(),
        ...authorize(spec, deps.authenticator),
        ...conditionalHeaders(spec),
        ...idempotencyKeySyntax(spec),
        ...bodyParsing(spec),
        ...idempotencyScope(spec),
        dispatch(spec),
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
