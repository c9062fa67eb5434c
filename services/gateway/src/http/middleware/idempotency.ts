/** The Idempotency-Key step of the chain: syntax first, then the key scoped and the request fingerprinted. */
import type { NextFunction, Request, Response } from "express";
import { fingerprintOf, IDEMPOTENCY_HEADER, readIdempotencyKey } from "../../idempotency/idempotency";
import type { RouteSpec } from "../route";
import { locals } from "./locals";

/**
 * 400 for a malformed Idempotency-Key before anything is read (the client retries with the same key). No step
 * for a route that is not idempotent.
 */
export function idempotencyKeySyntax(spec: RouteSpec) {
  if (!spec.idempotent) return [];
  const step = (req: Request, res: Response, next: NextFunction) => {
    const values = req.headersDistinct[IDEMPOTENCY_HEADER];
    locals(res).idempotencyKey = readIdempotencyKey(values?.length === 1 ? values[0] : values);
    next();
  };
  return [step];
}

/**
 * The normalised request path of a route, /v1 + the spec path with the parameters filled in, as a function of the
 * parameters (the spec path is split once, when the route's chain is built).
 */
function canonicalPath(spec: RouteSpec): (params: Record<string, string>) => string {
  // Odd items are parameter names, even items the literal text around them.
  const parts = ("/v1" + spec.path).split(/\{(\w+)\}/);
  return (params) => {
    let path = parts[0]!;
    for (let i = 1; i < parts.length; i += 2)
      path += encodeURIComponent(params[parts[i]!] ?? "") + parts[i + 1]!;
    return path;
  };
}

/**
 * After the body is read: the key with what the owning service needs to record the result with its write
 * (the request's fingerprint and the calling key's organization), carried in the request context.
 */
export function idempotencyScope(spec: RouteSpec) {
  if (!spec.idempotent) return [];
  const pathOf = canonicalPath(spec);
  const step = (req: Request, res: Response, next: NextFunction) => {
    const l = locals(res);
    if (l.idempotencyKey === undefined || !l.key) return next();
    const path = pathOf(req.params as Record<string, string>);
    l.idempotency = {
      key: l.idempotencyKey,
      fingerprint: fingerprintOf(req.method, path, req.body),
      callerOrganizationId: l.key.organization_id,
    };
    next();
  };
  return [step];
}
