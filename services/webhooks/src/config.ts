import { z } from "zod";
import { address, positiveInt } from "@dpp/kit";

/** The webhooks service's own variables (the common ones come from the kit's service template). */
export const webhooksEnv = {
  /** The events service, whose feed is delivered. */
  EVENTS_ADDR: address.default("127.0.0.1:50052"),
  /** How often each replica's delivery worker leases due endpoints. */
  WEBHOOKS_POLL_INTERVAL_MS: positiveInt(100),
  /** An endpoint whose run found nothing to deliver is read again after this long (one that delivered: next pass). */
  WEBHOOKS_IDLE_MS: positiveInt(200),
  /** How long a worker holds an endpoint; a worker that died gives it up after this. */
  WEBHOOKS_LEASE_MS: positiveInt(60_000),
  /** Endpoints one replica delivers at the same time. */
  WEBHOOKS_CONCURRENCY: positiveInt(64),
  /** Feed events read per run of an endpoint. */
  WEBHOOKS_BATCH: z.coerce.number().int().min(1).max(100).default(50),
  /** Connection timeout of one delivery. */
  WEBHOOKS_CONNECT_TIMEOUT_MS: positiveInt(3_000),
  /** The whole exchange of one delivery. */
  WEBHOOKS_TIMEOUT_MS: positiveInt(10_000),
  /** At most this much of an answer is read. */
  WEBHOOKS_MAX_RESPONSE_BYTES: positiveInt(4_096),
  /** First retry delay; it doubles per consecutive failure, up to WEBHOOKS_RETRY_MAX_MS, with jitter. */
  WEBHOOKS_RETRY_BASE_MS: positiveInt(5_000),
  WEBHOOKS_RETRY_MAX_MS: positiveInt(3_600_000),
  /** An endpoint failing for this long is disabled (default 5 days: retries last at least 72 hours). */
  WEBHOOKS_DISABLE_AFTER_MS: positiveInt(5 * 24 * 3_600_000),
  /** Attempts are kept this many days. */
  WEBHOOKS_ATTEMPT_RETENTION_DAYS: positiveInt(30),
};
