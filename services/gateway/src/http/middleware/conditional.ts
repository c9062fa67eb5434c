import { ApiError } from "@dpp/contract";
import type { RouteSpec, Step } from "../route";
import type { Conditional } from "./locals";
import { headerFacts } from "./inputs";

const bad = (header: string, rule: string, message: string) =>
  new ApiError("invalid_request", message, { issues: [{ source: { header }, rule, message }] });

/**
 * The step of a `conditional` route (none for other routes). Expected-Version (a non-negative integer) and
 * If-Match (exactly `*`; an ETag or anything else is refused) on `conditional` routes: a malformed one is 400
 * invalid_request before any idempotency key is claimed or any body read, so it is never recorded and the client
 * fixes the header and retries under the same key.
 */
export function conditionalHeaders(spec: RouteSpec): Step | undefined {
  if (!spec.conditional) return undefined;
  return (req, _res, l) => {
    const conditional: Conditional = {};
    const { expectedVersion: ev, ifMatch: im } = headerFacts(req, l);
    if (ev !== undefined) {
      const v = ev.length === 1 ? ev[0]!.trim() : "";
      if (!/^\d{1,9}$/.test(v))
        throw bad(
          "Expected-Version",
          "non_negative_integer",
          "Expected-Version must be one non-negative integer: the passport version read earlier.",
        );
      conditional.expectedVersion = Number(v);
    }
    if (im !== undefined) {
      if (im.length !== 1 || im[0]!.trim() !== "*")
        throw bad(
          "If-Match",
          "asterisk_only",
          "If-Match accepts only `*`; use Expected-Version with the passport's version instead of an ETag.",
        );
    }
    l.conditional = conditional;
  };
}
