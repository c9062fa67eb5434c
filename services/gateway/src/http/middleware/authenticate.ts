/**
 * The route's auth mode, in two steps around the rate limit: `authenticate` (the key) comes first, so that every
 * later answer, refusals included, counts against the key; `authorize` (the organization in the path and the
 * route's scope) comes after it.
 */
import { ApiError } from "@dpp/contract";
import type { Authenticator } from "../../modules/identity/authenticator";
import type { KeyRecord } from "../../modules/identity/identity.repository";
import type { RateLimiter } from "../../ratelimit/limiter";
import type { RouteSpec, Step } from "../route";
import { headerFacts } from "./inputs";
import type { RequestLocals } from "./locals";
import { clientAddress } from "./rate-limit";

/** The refusals of a credential: each counts as one failed authentication of the client address. */
const AUTHENTICATION_FAILURES = new Set([
  "invalid_key",
  "key_revoked",
  "key_expired",
  "key_rotated",
  "mode_mismatch",
]);

const sentTwice = () =>
  new ApiError("invalid_request", "Send the Authorization header once.", {
    issues: [
      {
        source: { header: "Authorization" },
        rule: "single_value",
        message: "Authorization was sent more than once.",
      },
    ],
  });

/**
 * The key of the request. Authorization sent twice is 400 invalid_request (which one was meant is unknown). An
 * address over its budget of failed authentications is refused 429 before the key it sends is looked up; each
 * failed authentication counts against that budget. No step for a route without authentication.
 */
export function authenticate(
  spec: RouteSpec,
  auth: Authenticator,
  limiter: RateLimiter | undefined,
): Step | undefined {
  if (spec.auth === "none") return undefined;
  const optional = spec.auth === "optional";
  return (req, _res, l) => {
    const values = headerFacts(req, l).authorization;
    if (values !== undefined && values.length > 1) throw sentTwice();
    const header = values?.[0];
    if (optional && header === undefined) return;
    if (!limiter) {
      const key = auth.keyOf(header);
      if (!(key instanceof Promise)) {
        l.key = key;
        return;
      }
      return key.then((k) => void (l.key = k));
    }
    return limitedKey(limiter, auth, header, clientAddress(req), l);
  };
}

/** The key, behind the budget of failed authentications of the client address. */
async function limitedKey(
  limiter: RateLimiter,
  auth: Authenticator,
  header: string | undefined,
  address: string,
  l: RequestLocals,
): Promise<void> {
  await limiter.assertUnder("auth_failures", address);
  let key: KeyRecord;
  try {
    key = await auth.keyOf(header);
  } catch (err) {
    if (err instanceof ApiError && AUTHENTICATION_FAILURES.has(err.code))
      throw (await limiter.countFailure("auth_failures", address)) ?? err;
    throw err;
  }
  l.key = key;
}

/** The organization in the path (own or granted) and the route's scope; no step for a route without one. */
export function authorize(spec: RouteSpec, auth: Authenticator): Step | undefined {
  if (spec.auth !== "organization" && spec.auth !== "grantor") return undefined;
  const { scope } = spec;
  if (spec.auth === "organization")
    return (req, _res, l) => {
      const key = l.key;
      if (!key) return;
      const access = auth.accessOf(key, (req.params as Record<string, string>).organization!);
      if (!(access instanceof Promise)) {
        if (scope) auth.requireScope(access, scope);
        l.access = access;
        return;
      }
      return access.then((a) => {
        if (scope) auth.requireScope(a, scope);
        l.access = a;
      });
    };
  // Grant endpoints: the key's scopes on its own organization, never a grant (see resolveGrantTarget).
  return async (req, _res, l) => {
    const key = l.key;
    if (!key) return;
    const access = await auth.resolveGrantTarget(key, (req.params as Record<string, string>).organization!);
    if (scope) auth.requireScope(access, scope);
    l.access = access;
  };
}
