import express, { type NextFunction, type Request, type Response } from "express";
import { ApiError, validationFailed } from "@dpp/contract";
import type { RouteSpec } from "../route";
import { JSON_LIMITS, parseStrictJsonBytes } from "../strict-json";

function hasBody(req: Request): boolean {
  const len = req.headers["content-length"];
  return req.headers["transfer-encoding"] !== undefined || (len !== undefined && len !== "0");
}

/** The charset parameter of the Content-Type, lower-cased (undefined when absent). */
function charsetOf(req: Request): string | undefined {
  const m = /;\s*charset\s*=\s*"?([^";\s]*)"?/i.exec(req.headers["content-type"] ?? "");
  return m ? m[1]!.toLowerCase() : undefined;
}

/**
 * The body steps of a route that takes one: 415 for a body that is not JSON (or not UTF-8), the bytes read up to
 * the route's ceiling (413), then the one strict parser (strict-json.ts): 400 invalid_request for what cannot be
 * understood as one JSON document, 422 validation_failed for text a field may not hold. Nothing after these
 * steps sees a body that is not a well-formed, bounded JSON value.
 */
export function bodyParsing(spec: RouteSpec) {
  if (spec.bodyLimitBytes === undefined) return [];
  return [
    (req: Request, _res: Response, next: NextFunction) => {
      if (!hasBody(req)) return next();
      if (!req.is("application/json"))
        return next(
          new ApiError(
            "unsupported_media_type",
            "Send the body as JSON with Content-Type: application/json.",
            {
              content_type: req.headers["content-type"] ?? null,
            },
          ),
        );
      const charset = charsetOf(req);
      if (charset !== undefined && charset !== "utf-8" && charset !== "utf8")
        return next(
          new ApiError("unsupported_media_type", "Send the body as UTF-8 JSON.", {
            content_type: req.headers["content-type"] ?? null,
          }),
        );
      next();
    },
    // The step above let only JSON bodies through: the reader checks the type again only for what that step
    // skipped as empty (Content-Length: 0), as it did before.
    express.raw({
      limit: spec.bodyLimitBytes,
      type: (req) => hasBody(req as Request) || Boolean((req as Request).is("application/json")),
    }),
    (req: Request, _res: Response, next: NextFunction) => {
      if (!Buffer.isBuffer(req.body)) return next();
      const bytes = req.body;
      req.body = undefined;
      if (bytes.length === 0) return next();
      const parsed = parseStrictJsonBytes(bytes, JSON_LIMITS);
      if (!parsed.ok) {
        const { rule, pointer, message } = parsed.refusal;
        return next(new ApiError("invalid_request", message, { issues: [{ source: { pointer }, rule }] }));
      }
      if (parsed.issues.length) return next(validationFailed(parsed.issues, undefined, parsed.totalIssues));
      req.body = parsed.value;
      next();
    },
  ];
}
