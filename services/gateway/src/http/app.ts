/**
 * The HTTP app: probes, then /v1 routed from the route table (src/routes.ts). Each route runs the same
 * chain (middleware/): authenticate the key → rate limit (every later answer counts) → path, query and
 * header hygiene → organization and scope → conditional headers → Idempotency-Key syntax → media type
 * and the strict JSON body with the route's limit → idempotency scope → its handler. Unknown methods
 * answer 405 with Allow, unknown paths 404; one error responder builds every error envelope. Every
 * response carries the security headers of middleware/security.ts.
 *
 * Express is the server (its request and response, the body reader); the routing is the gateway's own
 * (docs/decisions/0029): one express middleware takes every request, finds its route with one lookup in a
 * tree precompiled from the table (route.ts), and runs the route's chain as one function whose steps wait
 * only when they have something to wait for.
 */
import express from "express";
import { ApiError } from "@dpp/contract";
import { type Logger, type ServiceMetrics } from "@dpp/kit";
import type { Authenticator } from "../modules/identity/authenticator";
import type { RateLimiter } from "../ratelimit/limiter";
import { forMethod, PathRouter, type Route, type Step } from "./route";
import { docsPage } from "./docs";
import { authenticate, authorize } from "./middleware/authenticate";
import { bodyParsing } from "./middleware/body";
import { conditionalHeaders } from "./middleware/conditional";
import { dispatch } from "./middleware/dispatch";
import { errorResponder } from "./middleware/errors";
import { idempotencyKeySyntax, idempotencyScope } from "./middleware/idempotency";
import { inputHygiene } from "./middleware/inputs";
import type { RequestLocals } from "./middleware/locals";
import { requestLog, startRequest } from "./middleware/observe";
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
  /** The review page for people (src/review/page.ts), served under /review, outside the API. */
  review?: express.Router;
  /** The service's metrics: each answer counted and timed under its route's pattern (observe.ts). */
  metrics?: ServiceMetrics;
}

export function createApp(deps: AppDeps): express.Express {
  const app = express();
  app.disable("x-powered-by");
  app.set("etag", false);
  app.set("trust proxy", deps.trustProxy);
  app.set("query parser", "simple");

  const v1 = new PathRouter(
    deps.routes.map((route) => ({ path: route.path, method: route.method, target: routeChain(route, deps) })),
  );
  const fail = errorResponder(deps);
  const logLine = requestLog(deps.log, deps.metrics);
  /** The route label of each /v1 path (metrics): the table's pattern under /v1, never the raw path. */
  const labels = new WeakMap<object, string>();
  const labelOf = (target: { path: string }) => {
    let label = labels.get(target);
    if (label === undefined) labels.set(target, (label = `/v1${target.path}`));
    return label;
  };
  /** /docs is counted like the other answers without a key: against the client address's anonymous limit. */
  const limitAnonymous = rateLimit(deps.rateLimiter);

  /** The answer to a request: a probe, the API reference, or a route of /v1. */
  const answer = (req: express.Request, res: express.Response, l: RequestLocals): void | Promise<void> => {
    const { method } = req;
    const path = req.path;
    if (method === "GET" || method === "HEAD") {
      if (isPath(path, "/docs")) {
        l.route = "/docs";
        const limited = limitAnonymous?.(req, res, l);
        return limited ? limited.then(() => docsPage(req, res)) : docsPage(req, res);
      }
      if (isPath(path, "/healthz")) {
        l.route = "/healthz";
        res.json({ status: "ok" });
        return;
      }
      if (isPath(path, "/readyz")) {
        l.route = "/readyz";
        return deps
          .ready()
          .then(() => void res.json({ status: "ready" }))
          .catch(() => {
            throw new ApiError("internal_error", "Not ready.", { reason: "not_ready" });
          });
      }
    }
    const under = underV1(path);
    if (under === undefined)
      throw new ApiError("resource_not_found", `No endpoint at ${method} ${path}; the API lives under /v1.`, {
        path,
      });
    const found = v1.match(under);
    if (!found)
      throw new ApiError("resource_not_found", `No endpoint at ${method} /v1${under}.`, {
        path: `/v1${under}`,
      });
    l.route = labelOf(found.target);
    const chain = forMethod(found.target, method);
    if (!chain) {
      const { allow, allowList } = found.target;
      throw new ApiError(
        "method_not_allowed",
        `${method} is not answered here; allowed: ${allow}.`,
        { allow: [...allowList] },
        { Allow: allow },
      );
    }
    req.params = found.params;
    return chain(req, res, l);
  };

  if (deps.review) {
    const review = deps.review;
    // The review page's answers are counted too, under the pattern of the page's route that answered.
    const metrics = deps.metrics;
    app.use("/review", (req, res, next) => {
      if (metrics) {
        const started = performance.now();
        res.once("finish", () =>
          metrics.httpAnswer(
            reviewRoute(req),
            req.method,
            res.statusCode,
            (performance.now() - started) / 1000,
          ),
        );
      }
      review(req, res, next);
    });
  }
  app.use((req, res) => {
    const l = startRequest(req, res, logLine);
    let pending: void | Promise<void>;
    try {
      pending = answer(req, res, l);
    } catch (err) {
      fail(err, req, res);
      return;
    }
    if (pending) pending.catch((err: unknown) => fail(err || new Error("Rejected promise"), req, res));
  });
  return app;
}

/**
 * The steps of a route as one function. A step that does not apply to the route (e.g. Idempotency-Key on a GET)
 * is left out of its chain.
 */
function routeChain(route: Route, deps: AppDeps): Step {
  const steps = [
    authenticate(route, deps.authenticator, deps.rateLimiter),
    rateLimit(deps.rateLimiter),
    inputHygiene(route),
    authorize(route, deps.authenticator),
    conditionalHeaders(route),
    ...idempotencyKeySyntax(route).map(fromMiddleware),
    ...bodyParsing(route).map(fromMiddleware),
    ...idempotencyScope(route).map(fromMiddleware),
    dispatch(route),
  ].filter((step): step is Step => step !== undefined);
  const run = (req: express.Request, res: express.Response, l: RequestLocals, from: number) => {
    for (let i = from; i < steps.length; i++) {
      const pending = steps[i]!(req, res, l);
      if (pending) return pending.then((): void | Promise<void> => run(req, res, l, i + 1));
    }
  };
  return (req, res, l) => run(req, res, l, 0);
}

type Middleware = (req: express.Request, res: express.Response, next: (err?: unknown) => void) => unknown;

/** An express middleware (body.ts, idempotency.ts) as a step: done when it calls next(), refused by next(err). */
function fromMiddleware(middleware: Middleware): Step {
  return (req, res) => {
    let outcome: { err: unknown } | undefined;
    let settle: ((o: { err: unknown }) => void) | undefined;
    const next = (err?: unknown) => {
      if (outcome) return;
      outcome = { err };
      settle?.(outcome);
    };
    const returned = middleware(req, res, next);
    if (outcome) {
      if (outcome.err) throw outcome.err;
      return;
    }
    return new Promise<void>((resolve, reject) => {
      settle = (o) => (o.err ? reject(o.err) : resolve());
      if (returned instanceof Promise)
        returned.catch((err: unknown) => next(err || new Error("Rejected promise")));
    });
  };
}

/**
 * Whether `path` is `literal` (lower case) as express matched the app's own paths: ASCII letters in any case, one
 * trailing slash allowed.
 */
function isPath(path: string, literal: string): boolean {
  let n = path.length;
  if (n === literal.length + 1 && path.charCodeAt(n - 1) === 47 /* / */) n--;
  if (n !== literal.length) return false;
  for (let i = 0; i < n; i++) {
    let c = path.charCodeAt(i);
    if (c >= 65 && c <= 90) c += 32;
    if (c !== literal.charCodeAt(i)) return false;
  }
  return true;
}

/**
 * The path under /v1 ("/" for /v1 itself), or undefined for a path elsewhere. The prefix matches in any case
 * (/V1/...), as the mount of express's /v1 router always did; what follows it is matched case-sensitively.
 */
function underV1(path: string): string | undefined {
  if (
    path.length < 3 ||
    path.charCodeAt(0) !== 47 ||
    (path.charCodeAt(1) | 32) !== 118 ||
    path.charCodeAt(2) !== 49
  )
    return undefined;
  if (path.length === 3) return "/";
  if (path.charCodeAt(3) !== 47) return undefined;
  return path.length === 4 ? "/" : path.slice(3);
}

/** The route label of an answer of the review page: /review and the pattern of its route, or /review alone. */
function reviewRoute(req: express.Request): string {
  const pattern = (req.route as { path?: unknown } | undefined)?.path;
  return typeof pattern === "string" ? `/review${pattern}` : "/review";
}
