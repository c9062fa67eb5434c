/** The rate limit step of the chain (the limiter itself is src/ratelimit/limiter.ts). */
import type { NextFunction, Request, Response } from "express";
import type { RateLimiter } from "../../ratelimit/limiter";
import { locals } from "./locals";

/** The client's address as the limits count it (`req.ip`, through TRUST_PROXY hops). */
export function clientAddress(req: Request): string {
  return req.ip ?? req.socket.remoteAddress ?? "unknown";
}

/**
 * Per-key (or, without a key, per-client-address) limits; RateLimit fields on every limited response. It runs
 * right after the key is authenticated, so every answer to a key (its refusals too) counts against it. No step
 * without a limiter.
 */
export function rateLimit(limiter: RateLimiter | undefined) {
  if (!limiter) return [];
  const step = async (req: Request, res: Response, next: NextFunction) => {
    const key = locals(res).key;
    const decision = key
      ? await limiter.consume("key", key.id)
      : await limiter.consume("anonymous", clientAddress(req));
    for (const [k, v] of Object.entries(decision.headers)) res.setHeader(k, v);
    next();
  };
  return [step];
}
