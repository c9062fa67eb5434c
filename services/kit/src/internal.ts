/**
 * @dpp/kit/internal: the kit's plumbing, besides everything `@dpp/kit` offers: database pools and migrations,
 * internal authentication (keys, signers, verifiers, metadata names), the gRPC server, health and error mapping,
 * the request context on the wire, the outbox relay, leader jobs, the service template's steps (config,
 * migrate, start). For the local stack (tools/stack), the benchmark, the admin CLI, the gateway's edge and
 * tests; a service's own code imports `@dpp/kit`.
 *
 * Not here either: the message encoder (encode.ts), the prepared-statement driver (db.ts: PreparedStatements,
 * queryOnPool, withConnection, LeadingStatements, executeStatement, valueLiterals) and runIdempotent, which the
 * kit's gRPC adapter, statement() and keyed calls use, tuned as docs/performance.md records.
 */
export * from "./index";
export * from "./config";
export * from "./context";
export * from "./internal-auth";
export * from "./grpc";
export * from "./server";
export * from "./jobs";
export * from "./outbox";
export * from "./service";
export {
  PREPARED_STATEMENTS_DEFAULT,
  analyzeSchema,
  createDb,
  createPool,
  lockKey,
  migrateDatabase,
  migrateKitPart,
  migrateSchema,
  type DbOptions,
} from "./db";
export {
  BUSY_RETRY_AFTER_S,
  IDEMPOTENCY_RETENTION_HOURS,
  REPLAYED_HEADER,
  idempotencyMigrations,
  migrateIdempotency,
  reapIdempotencyRecords,
  type IdempotentCallOptions,
  type IdempotentOutcome,
  type WithIdempotency,
} from "./idempotency";
export * from "./deadline";
