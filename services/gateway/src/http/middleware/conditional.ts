import type { NextFunction, Request, Response } from "express";
import { ApiError } from "@dpp/contract";
import type { Conditional, RouteSpec } from "../route";
import { locals } from "./locals";

/**
 * The step of a `conditional` route (none for other routes). Expected-Version (a non-negative integer) and If-Match (exactly `*`; an ETag or anything else is refused) on
 * `conditional` routes: a malformed one is 400 invalid_request before any idempotency key is claimed or any body
 * read, so it is never recorded and the client fixes the header and retries under the same key.
 */
export function conditionalHeaders(spec: RouteSpec) {
  if (!spec.conditional) return [];
  const step = (req: Request, res: Response, next: NextFunction) => {
    const bad = (header: string, rule: string, message: string) =>
      next(new ApiError("invalid_request", message, { issues: [{ source: { header }, rule, message }] }));
    const conditional: Conditional = {};
    const ev = req.headersDistinct["expected-version"];
    if (ev !== undefined) {
      const v = ev.length === 1 ? ev[0]!.trim() : "";
      if (!/^\d{1,9}$/.test(v))
        return bad(
          "Expected-Version",
          "non_negative_integer",
          "Expected-Version must be one non-negative integer: the passport version read earlier.",
        );
      conditional.expectedVersion = Number(v);
    }
    const im = req.headersDistinct["if-match"];
    if (im !== undefined) {
      if (im.length !== 1 || im[0]!.trim() !== "*")
        return bad(
          "If-Match",
          "asterisk_only",
          "If-Match accepts only `*`; use Expected-Version with the passport's version instead of an ETag.",
        );
    }
    locals(res).conditional = conditional;
    next();
  };
  return [step];
}
