/**
 * What every request gets first: its Request-Id, the headers of every answer (security.ts), and one log line when
 * its answer is sent.
 */
import type { Request, Response } from "express";
import type { Logger } from "@dpp/kit";
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

/**
 * The listener that writes a request's log line when its answer is sent (one function for every request: it
 * reads the answer from `this`): method, path, status, duration and key; error level for 5xx, warn for 4xx.
 */
export function requestLog(log: Logger): (this: Response) => void {
  return function logLine(this: Response) {
    const status = this.statusCode;
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
