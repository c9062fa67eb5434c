/** The rate limit step of the chain (the limiter itself is src/ratelimit/limiter.ts). */
import type { Request } from "express";
import type { RateLimiter } from "../../ratelimit/limiter";
import type { Step } from "../route";

/** The client's address as the limits count it (`req.ip`, through TRUST_PROXY hops). */
export function clientAddress(req: Request): string {
  return req.ip ?? req.socket.remoteAddress ?? "unknown";
}

/**
 * Per-key (or, without a key, per-client-address) limits; RateLimit fields on every limited response. It runs
 * right after the key is authenticated, so every answer to a key (its refusals too) counts against it. No step
 * without a limiter.
 */
export function rateLimit(limiter: RateLimiter | undefined): Step | undefined {
  if (!limiter) return undefined;
  return (req, res, l) =>
    (l.key
      ? limiter.consume("key", l.key.id)
      : l.authority
        ? limiter.consume("key", l.authority.id)
        : limiter.consume("anonymous", clientAddress(req))
    ).then((decision) => {
      const { headers } = decision;
      for (const name in headers) res.setHeader(name, headers[name]!);
    });
}
