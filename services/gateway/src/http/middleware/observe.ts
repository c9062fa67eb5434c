/** The first steps of every request: its Request-Id, and one log line when the answer is sent. */
import type { NextFunction, Request, Response } from "express";
import type { Logger } from "@dpp/kit";
import { locals, newRequestId } from "./locals";

/** Every response carries Request-Id; the same value is the envelope's request_id. */
export function requestId() {
  return (_req: Request, res: Response, next: NextFunction) => {
    const id = newRequestId();
    locals(res).requestId = id;
    res.setHeader("Request-Id", id);
    next();
  };
}

export function requestLog(log: Logger) {
  return (req: Request, res: Response, next: NextFunction) => {
    const started = process.hrtime.bigint();
    res.on("finish", () => {
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      const level = res.statusCode >= 500 ? "error" : res.statusCode >= 400 ? "warn" : "info";
      log[level](
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
  };
}
