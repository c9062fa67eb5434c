import type { NextFunction, Request, Response } from "express";
import { ApiError, toEnvelope } from "@dpp/contract";
import { type Logger } from "@dpp/kit";
import { locals, newRequestId } from "./locals";

/** Errors of a lost or refused database connection (as opposed to a query the database refused). */
const CONNECTION_ERRNOS = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ETIMEDOUT",
  "EPIPE",
  "EHOSTUNREACH",
  "ENOTFOUND",
  "EAI_AGAIN",
]);
const CONNECTION_SQLSTATES = new Set(["57P01", "57P02", "57P03", "53300"]);
const CONNECTION_MESSAGES =
  /Connection terminated|timeout exceeded when trying to connect|not queryable|is not currently accepting connections|the database system is (starting up|shutting down)/i;

/**
 * Whether an error is the database being out of reach for a moment (a restart, a failover, a dropped connection):
 * answered 500 internal_error with `details.reason` `database_unavailable` and `Retry-After: 1`; the pool opens
 * new connections by itself once the database answers again.
 */
export function isDatabaseUnavailable(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown } | null;
  if (!e || typeof e !== "object") return false;
  const code = typeof e.code === "string" ? e.code : "";
  if (CONNECTION_ERRNOS.has(code) || CONNECTION_SQLSTATES.has(code) || code.startsWith("08")) return true;
  return typeof e.message === "string" && CONNECTION_MESSAGES.test(e.message);
}

interface BodyParserError {
  type?: string;
  status?: number;
  limit?: number;
}

/** The one place where errors become envelopes. */
export function errorHandler(deps: { log: Logger; docsBaseUrl: string }) {
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
          } else if (isDatabaseUnavailable(err)) {
            deps.log.warn(
              {
                err: { message: (err as Error).message, code: (err as { code?: unknown }).code },
                request_id: requestId,
              },
              "database unavailable",
            );
            apiErr = new ApiError(
              "internal_error",
              "The database is unavailable for a moment; retry shortly.",
              { reason: "database_unavailable" },
              { "Retry-After": "1" },
            );
          } else {
            deps.log.error({ err, request_id: requestId }, "unhandled error");
            apiErr = new ApiError("internal_error");
          }
      }
    }
    if (res.headersSent) return;
    const text = JSON.stringify(toEnvelope(apiErr, requestId, deps.docsBaseUrl));
    for (const [k, v] of Object.entries(apiErr.headers)) res.setHeader(k, v);
    res.status(apiErr.status).type("application/json").send(text);
  };
}
