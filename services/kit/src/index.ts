/**
 * @dpp/kit: what a service's own code uses (docs/service-authors.md). Everything else of the kit is plumbing for
 * the local stack, the benchmark, the admin CLI, the gateway's edge and tests, in `@dpp/kit/internal`; test
 * support is `@dpp/kit/testing`, tracing `@dpp/kit/tracing`. The message encoder (encode.ts), its reader
 * (decode.ts) and the prepared-statement driver (db.ts) are exported by no entry: the kit's gRPC adapter,
 * statement() and keyed calls use them for a service.
 */

// The service template: a service's definition, its runtime (`rt`: pool, bus, jobs, clients, serve) and main.
export {
  defineService,
  runService,
  type CommonServiceConfig,
  type ServiceConfig,
  type ServiceDefinition,
  type ServiceRuntime,
} from "./service";
export type { LeaderJob } from "./jobs";
// An HTTP server of a service closes as the drain closes the gRPC server (SIGTERM: rt.onStop).
export { closeConnectionsWhileDraining, closeHttpServer } from "./server";

// Metrics (`rt.metrics`; docs/metrics.md): what a service adds to the kit's own series.
export {
  ServiceMetrics,
  DURATION_BUCKETS,
  type HttpRouteMetrics,
  type IdempotencyOutcome,
  type Sample,
} from "./metrics";

// Configuration (a service's own variables are a zod shape, validated at start with the common ones) and logs.
export {
  ConfigError,
  address,
  listenAddress,
  loadConfig,
  logLevel,
  positiveInt,
  postgresUrl,
} from "./config";
export { createLogger, type Logger } from "./logger";

// The context of a call: tenant, mode, key, plan, Idempotency-Key.
export {
  requireTenant,
  type CallContext,
  type CallOutcome,
  type CredentialKind,
  type IdempotencyContext,
  type PlanContext,
  type RequestContext,
  type TenantContext,
} from "./context";

// The plan's refusal of live-mode writes (from the plan the gateway put into the context).
export { assertLiveWriteAllowed, liveWriteRefusal } from "./plan-rules";

// gRPC: the implementation of a service, a handler's call, a client of another service.
export {
  createClient,
  safeToRepeat,
  type CallOptions,
  type ClientOf,
  type ClientOptions,
  type ImplOf,
} from "./grpc";

// The store: transactions that join a keyed call's, one-statement writes, statements compiled once, errors.
export {
  createIdempotencyTable,
  effectTransaction,
  IDEMPOTENCY_RETENTION_HOURS,
  recordedFailure,
  singleStatement,
  transaction,
  type CallScope,
  type IdempotencyTable,
  type WithIdempotency,
} from "./idempotency";
export { statement, type Statement } from "./statement";
export { databaseUnavailable, isDatabaseUnavailable, isUniqueViolation } from "./db";

// Lists: page sizes and cursors.
export {
  DEFAULT_LIMIT,
  MAX_LIMIT,
  decodeCursor,
  encodeCursor,
  page,
  pageLimit,
  parseLimit,
} from "./pagination";

// Events: written to the outbox with the change, consumed from the bus (`rt.bus`).
export {
  createOutboxTable,
  outboxInsert,
  writeOutbox,
  writeOutboxMany,
  type OutboxTable,
  type WithOutbox,
} from "./outbox";
export { DOMAIN_EVENTS_TOPIC } from "./events";
export {
  DEFAULT_FEED_CONSUMER_GROUP,
  type Bus,
  type BusMessage,
  type SubscribeOptions,
  type Subscription,
} from "@dpp/bus";

// Keyed calls: effects run once per Idempotency-Key (docs/writes-under-a-key.md).
export {
  runKeyedItem,
  runKeyedItems,
  itemFingerprint,
  KEYED_ITEMS_LANES,
  KEYED_ITEMS_PER_TRANSACTION,
  type KeyedItemOptions,
  type KeyedItemsOptions,
  type KeyedItemResult,
} from "./keyed-items";
export { once, EFFECT_LEASE_MS_DEFAULT, type EffectRun, type OnceOptions } from "./effects";
