/**
 * What every request gets first: its Request-Id, the headers of every answer (security.ts), and one log line when
 * its answer is sent.
 */
import type { Request, Response } from "express";
import type { Logger } from "@dpp/kit";
import type { ServiceMetrics } from "@dpp/kit";
import { RequestLocals, newRequestId } from "./locals";
import { securityHeaders } from "./security";

/**
 * Starts a request: a Request-Id (every response carries it; the same value is the envelope's request_id), the
 * security headers, and the log line of `requestLog` when the answer has been sent.
 */
export function startRequest(req: Request, res: Response, logLine: (this: Response) => void): RequestLocals {
  const l = new RequestLocals(newRequestId());
  res.locals = l as unknown as Record<string, unknown>;
  res.setHeader("Request-Id", l.requestId);
  securityHeaders(req, res);
  res.on("finish", logLine);
  return l;
}

/** The route label of a request that matched no route (an unknown path): never its raw path. */
export const UNMATCHED_ROUTE = "unmatched";

/**
 * The listener that writes a request's log line when its answer is sent (one function for every request: it
 * reads the answer from `this`): method, path, status, duration and key; error level for 5xx, warn for 4xx. With
 * `metrics`, it also counts the answer and its time under the route's pattern (dpp_http_requests_total,
 * dpp_http_request_duration_seconds).
 */
export function requestLog(log: Logger, metrics?: ServiceMetrics): (this: Response) => void {
  return function logLine(this: Response) {
    const status = this.statusCode;
    if (metrics) {
      const l = this.locals as unknown as RequestLocals;
      metrics.httpAnswer(
        l.route ?? UNMATCHED_ROUTE,
        this.req.method,
        status,
        (performance.now() - l.started) / 1000,
      );
    }
    const level = status >= 500 ? "error" : status >= 400 ? "warn" : "info";
    if (!log.isLevelEnabled(level)) return;
    const l = this.locals as unknown as RequestLocals;
    const req = this.req;
    log[level](
      {
        request_id: l.requestId,
        method: req.method,
        path: req.path,
        status,
        ms: Math.round((performance.now() - l.started) * 10) / 10,
        key_id: l.key?.id ?? l.authority?.id,
      },
      "request",
    );
  };
}
