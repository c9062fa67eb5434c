/**
 * The HTTP app: probes, then /v1 routed from the route table (src/routes.ts). Each route runs the same
 * chain (middleware/): authenticate and check the scope → rate limit → conditional headers →
 * Idempotency-Key syntax → media type and JSON body with the route's limit → idempotency scope → its
 * handler. Unknown methods answer 405 with Allow, unknown paths 404; one error handler builds every
 * error envelope.
 */
import express from "express";
import { ApiError } from "@dpp/contract";
import { type Logger } from "@dpp/kit";
import type { Authenticator } from "../modules/identity/authenticator";
import type { RateLimiter } from "../ratelimit/limiter";
import { allowedMethods, expressPath, type Route } from "./route";
import { docsPage } from "./docs";
import { authenticate } from "./middleware/authenticate";
import { bodyParsing } from "./middleware/body";
import { conditionalHeaders } from "./middleware/conditional";
import { dispatch } from "./middleware/dispatch";
import { errorHandler } from "./middleware/errors";
import { idempotencyKeySyntax, idempotencyScope } from "./middleware/idempotency";
import { requestId, requestLog } from "./middleware/observe";
import { rateLimit } from "./middleware/rate-limit";

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

  const v1 = express.Router({ caseSensitive: true, strict: false });
  const paths = [...new Set(routes.map((r) => r.path))];
  for (const path of paths) {
    const route = v1.route(expressPath(path));
    for (const spec of routes.filter((r) => r.path === path)) {
      const method = spec.method.toLowerCase() as "get" | "post" | "patch" | "delete";
      route[method](
        authenticate(spec, deps.authenticator),
        rateLimit(deps.rateLimiter),
        conditionalHeaders(spec),
        idempotencyKeySyntax(spec),
        ...bodyParsing(spec),
        idempotencyScope(spec),
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
