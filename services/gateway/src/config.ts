import { z } from "zod";
import { positiveInt } from "@dpp/kit";
import { downstreamEnv } from "./downstream.generated";
import { MAX_CACHE_TTL_MS } from "./store/ttl-cache";

/** A cache lifetime in ms (identity-cache.ts): 0 turns the cache off; never above MAX_CACHE_TTL_MS. */
const cacheTtl = z.coerce.number().int().min(0).max(MAX_CACHE_TTL_MS).default(MAX_CACHE_TTL_MS);

/** The gateway's own variables (the common ones come from the kit's service template). */
export const gatewayEnv = {
  HTTP_HOST: z.string().default("0.0.0.0"),
  HTTP_PORT: z.coerce.number().int().min(0).max(65535).default(8080),
  /** <NAME>_ADDR of every service the gateway calls (generated from services.json). */
  ...downstreamEnv,
  /** Deadline of every call to a service. */
  GRPC_DEADLINE_MS: positiveInt(5000),
  /** Express "trust proxy": hops in front of the gateway (0 when clients connect directly). */
  TRUST_PROXY: z.coerce.number().int().min(0).default(0),
  /** Base of documentation_url in error envelopes. */
  DOCS_BASE_URL: z.string().url().default("https://docs.dpp.example/errors"),
  /** Redis for rate limits shared by every replica; unset: in-process limits. */
  REDIS_URL: z
    .string()
    .regex(/^rediss?:\/\//, "expected a redis:// or rediss:// URL")
    .optional()
    .or(z.literal("").transform(() => undefined)),
  /** Prefix of the rate limit keys in Redis. */
  RATE_LIMIT_KEY_PREFIX: z.string().min(1).default("dpp:rl"),
  /** Requests per minute per API key (every organization and mode it reaches). */
  RATE_LIMIT_PER_KEY_PER_MINUTE: positiveInt(600),
  /** Requests per minute per client address without a key (category endpoints). */
  RATE_LIMIT_ANONYMOUS_PER_MINUTE: positiveInt(60),
  /** Failed authentications per minute per client address; over it, a key that is not valid is answered 429. */
  RATE_LIMIT_AUTH_FAILURES_PER_MINUTE: positiveInt(60),
  /** Lifetime of a cached key record; the bound on revocation when a change notification is lost (max 5000). */
  KEY_CACHE_TTL_MS: cacheTtl,
  /** Lifetime of a cached organization (plan, subscription); the bound on a plan change when a notification is lost (max 5000). */
  ORGANIZATION_CACHE_TTL_MS: cacheTtl,
  /** Lifetime of a key's cached grant on a client; the bound on ending a grant or link when a notification is lost (max 5000). */
  GRANT_CACHE_TTL_MS: cacheTtl,
};
