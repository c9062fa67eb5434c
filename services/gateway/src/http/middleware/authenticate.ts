/**
 * The route's auth mode, in two steps around the rate limit: `authenticate` (the key) comes first, so that every
 * later answer, refusals included, counts against the key; `authorize` (the organization in the path and the
 * route's scope) comes after it.
 */
import type { NextFunction, Request, Response } from "express";
import { ApiError } from "@dpp/contract";
import type { Authenticator } from "../../modules/identity/authenticator";
import type { RateLimiter } from "../../ratelimit/limiter";
import type { RouteSpec } from "../route";
import { locals } from "./locals";
import { clientAddress } from "./rate-limit";

/** The refusals of a credential: each counts as one failed authentication of the client address. */
const AUTHENTICATION_FAILURES = new Set([
  "invalid_key",
  "key_revoked",
  "key_expired",
  "key_rotated",
  "mode_mismatch",
]);

/**
 * The key of the request. Authorization sent twice is 400 invalid_request (which one was meant is unknown). An
 * address over its budget of failed authentications is refused 429 before the key it sends is looked up; each
 * failed authentication counts against that budget. No step for a route without authentication.
 */
export function authenticate(spec: RouteSpec, auth: Authenticator, limiter: RateLimiter | undefined) {
  if (spec.auth === "none") return [];
  const step = async (req: Request, res: Response, next: NextFunction) => {
    const values = req.headersDistinct.authorization;
    if (values !== undefined && values.length > 1)
      throw new ApiError("invalid_request", "Send the Authorization header once.", {
        issues: [
          {
            source: { header: "Authorization" },
            rule: "single_value",
            message: "Authorization was sent more than once.",
          },
        ],
      });
    const header = values?.[0];
    if (spec.auth === "optional" && header === undefined) return next();
    const address = clientAddress(req);
    await limiter?.assertUnder("auth_failures", address);
    try {
      locals(res).key = await auth.authenticate(header);
    } catch (err) {
      if (limiter && err instanceof ApiError && AUTHENTICATION_FAILURES.has(err.code))
        throw (await limiter.countFailure("auth_failures", address)) ?? err;
      throw err;
    }
    next();
  };
  return [step];
}

/** The organization in the path (own or granted) and the route's scope; no step for a route without one. */
export function authorize(spec: RouteSpec, auth: Authenticator) {
  if (spec.auth !== "organization" && spec.auth !== "grantor") return [];
  const step = async (req: Request, res: Response, next: NextFunction) => {
    const key = locals(res).key;
    if (!key) return next();
    if (spec.auth === "organization") {
      const access = await auth.resolveOrganization(key, req.params.organization as string);
      if (spec.scope) auth.requireScope(access, spec.scope);
      locals(res).access = access;
    } else if (spec.auth === "grantor") {
      // Grant endpoints: the key's scopes on its own organization, never a grant (see resolveGrantTarget).
      const access = await auth.resolveGrantTarget(key, req.params.organization as string);
      if (spec.scope) auth.requireScope(access, spec.scope);
      locals(res).access = access;
    }
    next();
  };
  return [step];
}
