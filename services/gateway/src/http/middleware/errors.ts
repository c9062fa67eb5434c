import type { Request, Response } from "express";
import { ApiError, toEnvelope } from "@dpp/contract";
import { databaseUnavailable, isDatabaseUnavailable, type Logger } from "@dpp/kit";
import { sendJson } from "./dispatch";
import { locals, newRequestId } from "./locals";

interface BodyParserError {
  type?: string;
  status?: number;
  limit?: number;
}

/** The one place where errors become envelopes: the answer to a request whose handling failed with `err`. */
export function errorResponder(deps: { log: Logger; docsBaseUrl: string }) {
  return (err: unknown, req: Request, res: Response): void => {
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
            apiErr = databaseUnavailable();
          } else {
            deps.log.error({ err, request_id: requestId }, "unhandled error");
            apiErr = new ApiError("internal_error");
          }
      }
    }
    if (res.headersSent) return;
    const text = JSON.stringify(toEnvelope(apiErr, requestId, deps.docsBaseUrl));
    const headers = apiErr.headers;
    for (const name in headers) res.setHeader(name, headers[name]!);
    sendJson(req, res, apiErr.status, text);
  };
}
