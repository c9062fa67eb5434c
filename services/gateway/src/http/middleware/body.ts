import express, { type NextFunction, type Request, type Response } from "express";
import { ApiError } from "@dpp/contract";
import type { RouteSpec } from "../route";

function hasBody(req: Request): boolean {
  const len = req.headers["content-length"];
  return req.headers["transfer-encoding"] !== undefined || (len !== undefined && len !== "0");
}

/** 415 for a body that is not JSON, then the JSON parser with the route's ceiling. */
export function bodyParsing(spec: RouteSpec) {
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
