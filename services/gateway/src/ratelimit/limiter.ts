/**
 * Rate limits (docs/decisions/0010): fixed one-minute windows from
 * rate-limiter-flexible, counted in Redis (REDIS_URL) so every gateway replica
 * shares them, with an in-process RateLimiterMemory as insurance. When Redis is
 * unset, down or slow, the in-process limiter answers: fail open to per-process
 * limits, logged, never a 5xx.
 *
 * - anonymous callers (category endpoints without a key): ANON limit per client address;
 * - authenticated callers: the per-key limit, per key id (all modes and organizations), every answer counted
 *   (refusals after authentication included);
 * - failed authentications: AUTH_FAILURES per client address (docs/decisions/0019); past it, a key that is not
 *   valid is answered 429 instead of its refusal, while a valid key from that address is still served
 *   (docs/decisions/0045).
 */
import { Redis } from "ioredis";
import {
  RateLimiterMemory,
  RateLimiterRedis,
  RateLimiterRes,
  type RateLimiterAbstract,
} from "rate-limiter-flexible";
import { ApiError } from "@dpp/contract";
import { type Logger, type ServiceMetrics } from "@dpp/kit";

export interface RateLimitOptions {
  redisUrl?: string;
  keyPrefix: string;
  perKeyPerMinute: number;
  anonymousPerMinute: number;
  /** Failed authentications per minute per client address. */
  authFailuresPerMinute: number;
  log: Logger;
  /** Each 429 counted under its limit's policy name (dpp_rate_limit_refusals_total{limit}). */
  metrics?: ServiceMetrics;
}

export type Bucket = "anonymous" | "key" | "auth_failures";

export interface RateLimitDecision {
  /** Response headers for every limited response (draft IETF RateLimit fields). */
  headers: Record<string, string>;
}

const WINDOW_S = 60;
const POLICY: Record<Bucket, string> = {
  anonymous: "anonymous",
  key: "per-key",
  auth_failures: "auth-failures",
};

export class RateLimiter {
  private readonly limiters: Record<Bucket, RateLimiterAbstract>;
  private readonly quota: Record<Bucket, number>;
  private readonly redis?: Redis;
  private redisState: "unknown" | "up" | "down" = "unknown";

  constructor(private readonly o: RateLimitOptions) {
    this.quota = {
      anonymous: o.anonymousPerMinute,
      key: o.perKeyPerMinute,
      auth_failures: o.authFailuresPerMinute,
    };
    if (o.redisUrl) {
      this.redis = new Redis(o.redisUrl, {
        enableOfflineQueue: false,
        lazyConnect: true,
        maxRetriesPerRequest: 0,
        commandTimeout: 250,
        connectTimeout: 1000,
        retryStrategy: (times) => Math.min(times * 200, 2000),
        protocol: 2,
      });
      // ioredis reports every failed reconnect; log state changes only.
      this.redis.on("ready", () => {
        if (this.redisState !== "up") o.log.info({ redis: "ready" }, "rate limits counted in Redis");
        this.redisState = "up";
      });
      this.redis.on("error", (err: Error) => this.down(err.message));
      this.redis.on("end", () => this.down("connection ended"));
      this.redis.connect().catch((err: Error) => this.down(err.message));
    } else {
      o.log.info("REDIS_URL is not set: rate limits are counted in this process");
    }
    const make = (bucket: Bucket): RateLimiterAbstract => {
      const memory = new RateLimiterMemory({
        keyPrefix: `${o.keyPrefix}:${bucket}`,
        points: this.quota[bucket],
        duration: WINDOW_S,
      });
      if (!this.redis) return memory;
      return new RateLimiterRedis({
        storeClient: this.redis,
        keyPrefix: `${o.keyPrefix}:${bucket}`,
        points: this.quota[bucket],
        duration: WINDOW_S,
        rejectIfRedisNotReady: true,
        insuranceLimiter: memory,
      });
    };
    this.limiters = {
      anonymous: make("anonymous"),
      key: make("key"),
      auth_failures: make("auth_failures"),
    };
  }

  private down(reason: string) {
    if (this.redisState !== "down")
      this.o.log.warn(
        { redis: "down", reason },
        "Redis unavailable: rate limits fall back to in-process counters",
      );
    this.redisState = "down";
  }

  get usingRedis(): boolean {
    return this.redisState === "up";
  }

  /** The 429 of a bucket whose window resets in `msBeforeNext` (each one made is answered, and counted). */
  private refusal(bucket: Bucket, msBeforeNext: number): ApiError {
    const quota = this.quota[bucket];
    const retryAfter = Math.max(1, Math.ceil(msBeforeNext / 1000));
    const policy = POLICY[bucket];
    this.o.metrics?.rateLimitRefusal(policy);
    return new ApiError(
      "rate_limited",
      bucket === "auth_failures"
        ? `Too many failed authentications from this address: the limit is ${quota} per ${WINDOW_S} seconds; retry after ${retryAfter} s.`
        : `Too many requests: the limit is ${quota} per ${WINDOW_S} seconds; retry after ${retryAfter} s.`,
      { limit: quota, window_seconds: WINDOW_S, policy, retry_after_seconds: retryAfter },
      {
        "Retry-After": String(retryAfter),
        "RateLimit-Policy": `"${policy}";q=${quota};w=${WINDOW_S}`,
        RateLimit: `"${policy}";r=0;t=${retryAfter}`,
      },
    );
  }

  /** Anything but a refusal from the limiter is a limiter fault: fail open, logged. */
  private faulted(err: unknown): void {
    this.o.log.warn(
      { err: { message: (err as Error)?.message } },
      "rate limiter failed; request let through",
    );
  }

  /** Counts one request; throws 429 rate_limited (with Retry-After and RateLimit fields) when over. */
  async consume(bucket: Bucket, id: string): Promise<RateLimitDecision> {
    const quota = this.quota[bucket];
    const policy = `"${POLICY[bucket]}";q=${quota};w=${WINDOW_S}`;
    let res: RateLimiterRes;
    try {
      res = await this.limiters[bucket].consume(id, 1);
    } catch (err) {
      if (err instanceof RateLimiterRes) throw this.refusal(bucket, err.msBeforeNext);
      this.faulted(err);
      return { headers: {} };
    }
    return {
      headers: {
        "RateLimit-Policy": policy,
        RateLimit: `"${POLICY[bucket]}";r=${Math.max(0, res.remainingPoints)};t=${Math.max(0, Math.ceil(res.msBeforeNext / 1000))}`,
      },
    };
  }

  /** Counts one failure against `id`; the 429 to answer instead when that was one too many. */
  async countFailure(bucket: Bucket, id: string): Promise<ApiError | undefined> {
    try {
      await this.limiters[bucket].consume(id, 1);
      return undefined;
    } catch (err) {
      if (err instanceof RateLimiterRes) return this.refusal(bucket, err.msBeforeNext);
      this.faulted(err);
      return undefined;
    }
  }

  /**
   * The 429 to answer before even trying `id` again, when its failures already used the bucket's quota in this
   * window; else undefined. For a secret a person can guess (a password): counting failures alone would still
   * tell a right guess (accepted) from a wrong one (429) once over the limit.
   */
  async overLimit(bucket: Bucket, id: string): Promise<ApiError | undefined> {
    try {
      const res = await this.limiters[bucket].get(id);
      if (res && res.consumedPoints >= this.quota[bucket]) return this.refusal(bucket, res.msBeforeNext);
      return undefined;
    } catch (err) {
      this.faulted(err);
      return undefined;
    }
  }

  async close(): Promise<void> {
    if (this.redis) {
      this.redisState = "down";
      this.redis.removeAllListeners();
      this.redis.on("error", () => undefined);
      this.redis.disconnect();
    }
  }
}
