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
 * The key of the request. Authorization sent twice is 400 invalid_request (which one was meant is unknown). Each
 * failed authentication counts against the client address's budget; once the address used it up, a refused key
 * is answered 429 instead of its 401 (or 400 mode_mismatch), while a valid key from the same address is still
 * served: one failing client behind a shared address locks nobody else out (docs/decisions/0045). No step for a
 * route without authentication.
 */
export function authenticate(
  spec: RouteSpec,
  auth: Authenticator,
  limiter: RateLimiter | undefined,
): Step | undefined {
  if (spec.auth === "none") return undefined;
  if (spec.auth === "authority")
    return (req, _res, l) => {
      const values = headerFacts(req, l).authorization;
      if (values !== undefined && values.length > 1) throw sentTwice();
      return auth.authorityOf(values?.[0]).then(
        (t) => void (l.authority = t),
        (err: unknown) => {
          if (!limiter || !(err instanceof ApiError) || !AUTHENTICATION_FAILURES.has(err.code)) throw err;
          return limiter.countFailure("auth_failures", clientAddress(req)).then((over) => {
            throw over ?? err;
          });
        },
      );
    };
  const optional = spec.auth === "optional";
  return (req, _res, l) => {
    const values = headerFacts(req, l).authorization;
    if (values !== undefined && values.length > 1) throw sentTwice();
    const header = values?.[0];
    if (optional && header === undefined) return;
    /** A refusal of the key, counted against the address when it is a failed authentication. */
    const refused = (err: unknown): Promise<never> => {
      if (!limiter || !(err instanceof ApiError) || !AUTHENTICATION_FAILURES.has(err.code))
        return Promise.reject(err);
      return limiter.countFailure("auth_failures", clientAddress(req)).then((over) => {
        throw over ?? err;
      });
    };
    let key: KeyRecord | Promise<KeyRecord>;
    try {
      key = auth.keyOf(header);
    } catch (err) {
      return refused(err);
    }
    if (!(key instanceof Promise)) {
      l.key = key;
      return;
    }
    return key.then((k) => void (l.key = k), refused);
  };
}

/** The organization in the path (own or granted) and the route's scope; no step for a route without one. */
export function authorize(spec: RouteSpec, auth: Authenticator): Step | undefined {
  if (spec.auth === "authority")
    return (req, _res, l) => {
      if (l.authority)
        auth.authorityAccess(l.authority, (req.params as Record<string, string>).organization!);
    };
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
