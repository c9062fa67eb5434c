/**
 * The service template. A service declares what it is (name, schema,
 * migrations, its own variables, whether it serves gRPC and writes events) and
 * what it adds in `start`; the kit owns the rest, in one order for every service:
 *
 *   configuration validated (common variables + the service's own; a bad one
 *   stops the process naming every offending variable) → logger → pool →
 *   bus → outbox relay → the service's start (gRPC handlers, jobs, clients,
 *   stop hooks) → gRPC server with health → serving
 *
 * and shutdown (SIGTERM) as a drain: readiness off (gRPC health NOT_SERVING,
 * rt.draining() for HTTP readiness) → the service's drain hooks (its consumers)
 * and the jobs stopped → SHUTDOWN_DRAIN_DELAY_MS still answering → then in
 * reverse: gRPC server drained (calls in flight finish within
 * SHUTDOWN_GRACE_MS) → the service's stop hooks (last registered first) → jobs
 * → relay → bus → pool.
 *
 *   // services/<name>/src/main.ts
 *   import "./tracing";
 *   import { runService } from "@dpp/kit";
 *   import { myService } from "./service";
 *   runService(myService());
 *
 * `<service> migrate` applies the kit's tables the definition declares (outbox,
 * idempotency), the service's migrations and the bus tables, and exits;
 * `<service> serve` (the default) runs until SIGTERM/SIGINT, or, run in a
 * worker thread (the local stack), until its parent posts SHUTDOWN_MESSAGE.
 */
import type * as grpc from "@grpc/grpc-js";
import type { GenService, GenServiceMethods } from "@bufbuild/protobuf/codegenv2";
import type { Kysely, Migration } from "kysely";
import { z } from "zod";
import { ConfigError, listenAddress, loadConfig, logLevel, positiveInt, postgresUrl } from "./config";
import { kafkaEnv, refineKafkaEnv } from "@dpp/bus";
import { createLogger, type Logger } from "./logger";
import { analyzeSchema, createDb, migrateDatabase, PREPARED_STATEMENTS_DEFAULT } from "./db";
import { createBus } from "@dpp/bus";
import { BUS_SCHEMA, migrateBus, PgBus, type Bus } from "@dpp/bus";
import { migrateOutbox, OutboxRelay, outboxBacklog, RELAY_DEBOUNCE_MS_DEFAULT } from "./outbox";
import { serveMetrics, ServiceMetrics, setDatabaseMetrics } from "./metrics";
import { poolStats } from "./db";
import { startLeaderJob, type LeaderJob, type LeaderJobOptions } from "./jobs";
import { migrateIdempotency, reapIdempotencyRecords } from "./idempotency";
import { enableKeyedCallChecks } from "./keyed-work";
import {
  addService,
  balancingChannelOptions,
  CALL_RETRY_DEFAULTS,
  createClient,
  DNS_MIN_TIME_BETWEEN_RESOLUTIONS_MS_DEFAULT,
  type PromiseClient,
  type ServiceImpl,
} from "./grpc";
import type { CallContext } from "./context";
import {
  createContextSigner,
  createContextVerifier,
  internalAuthCallerEnv,
  internalAuthServiceEnv,
  type ContextSigner,
  type ContextVerifier,
} from "./internal-auth";
import {
  MAX_CONNECTION_AGE_GRACE_MS_DEFAULT,
  MAX_CONNECTION_AGE_MS_DEFAULT,
  onShutdownSignal,
  startGrpcServer,
  type HealthService,
} from "./server";
import { healthV1 } from "@dpp/proto";

/**
 * The gRPC health entry that reports the bus: SERVING while every subscription
 * consumes and publishing works, NOT_SERVING while the bus recovers. A detail,
 * not readiness: the server ("") stays SERVING, so a service whose bus is down
 * keeps answering what needs only its database (the events feed).
 */
export const BUS_HEALTH_SERVICE = "dpp.bus";

/** The metrics port of a service when METRICS_PORT is unset. */
export const METRICS_PORT_DEFAULT = 9464;

/** Variables every service reads (the database, the bus and its relay, Kafka, logging, shutdown). */
export const commonServiceEnv = {
  DATABASE_URL: postgresUrl,
  /** Database of the Postgres-table bus; defaults to DATABASE_URL. */
  BUS_DATABASE_URL: postgresUrl.optional(),
  LOG_LEVEL: logLevel,
  /** Logs are appended to this file instead of stdout (a service the local stack runs in a worker thread). */
  LOG_FILE: z.string().min(1).optional(),
  DB_POOL_MAX: positiveInt(10),
  /** A pooled connection idle this long is closed. */
  DB_POOL_IDLE_MS: positiveInt(30_000),
  /**
   * Distinct statements each pool prepares (parsed and planned once per connection); 0: none, for a connection
   * pooler in transaction mode that keeps no prepared statement.
   */
  DB_PREPARED_STATEMENTS: z.coerce.number().int().min(0).default(PREPARED_STATEMENTS_DEFAULT),
  /** Outbox relay poll interval (it is also woken after each commit that wrote events). */
  RELAY_INTERVAL_MS: positiveInt(500),
  /**
   * A commit that wrote events wakes the relay this many ms later, so that the commits of that window are
   * relayed in one pass (0: at once).
   */
  RELAY_DEBOUNCE_MS: z.coerce.number().int().min(0).max(1000).default(RELAY_DEBOUNCE_MS_DEFAULT),
  /**
   * Time in-flight calls get on SIGTERM; also the bound of each other step of the drain (the consumers and jobs
   * stopping, the HTTP server closing).
   */
  SHUTDOWN_GRACE_MS: positiveInt(10000),
  /**
   * On SIGTERM, how long the process keeps answering with its readiness already off (gRPC health NOT_SERVING,
   * HTTP /readyz 503) before it stops listening: the time a load balancer or a Service's endpoints take to stop
   * sending it new requests (a few seconds on Kubernetes; 0 where nothing routes by readiness).
   */
  SHUTDOWN_DRAIN_DELAY_MS: z.coerce.number().int().min(0).default(0),
  /**
   * How often, at most, a caller resolves a service's DNS name again (its <NAME>_ADDR): when a connection closes
   * (a replica gone, a connection aged out), new replicas are found no sooner than this after the last lookup.
   */
  GRPC_DNS_MIN_INTERVAL_MS: positiveInt(DNS_MIN_TIME_BETWEEN_RESOLUTIONS_MS_DEFAULT),
  /**
   * Sends in all of a call that is safe to repeat (a read; a write under an Idempotency-Key) when the service it
   * calls is unavailable (a replica gone, a connection dropped), the first included; 1: never sent again. Every
   * attempt stays within the call's deadline.
   */
  GRPC_RETRY_MAX_ATTEMPTS: z.coerce.number().int().min(1).max(10).default(CALL_RETRY_DEFAULTS.maxAttempts),
  /** The wait before the second attempt, doubled before each next one (with jitter). */
  GRPC_RETRY_BACKOFF_MS: positiveInt(CALL_RETRY_DEFAULTS.backoffMs),
  /** How often idempotency records older than 24 h are deleted (services that keep them). */
  IDEMPOTENCY_REAP_INTERVAL_MS: positiveInt(600_000),
  /**
   * How often messages of the Postgres-table bus are deleted once every consumer group read them and they are
   * older than its retention (72 h); not used with Kafka, whose topic retention does it.
   */
  BUS_PRUNE_INTERVAL_MS: positiveInt(3_600_000),
  ...kafkaEnv,
  /**
   * Internal authentication (internal-auth.ts). Optional in the schema so that `migrate` runs without
   * them; `serve` requires the trusted keys of a gRPC service and the private key of a service that calls
   * another.
   */
  INTERNAL_AUTH_TRUSTED_KEYS: internalAuthServiceEnv.INTERNAL_AUTH_TRUSTED_KEYS.optional(),
  INTERNAL_AUTH_PRIVATE_KEY: internalAuthCallerEnv.INTERNAL_AUTH_PRIVATE_KEY.optional(),
  /**
   * 1: the checks of the keyed-call contract run (keyed-work.ts): a keyed call whose work writes outside its
   * transaction, or calls another service before its key is claimed, fails. For tests (the e2e harness sets it):
   * the checks make every promise of the process pay for async hooks.
   */
  KIT_TEST_CHECKS: z.enum(["0", "1"]).optional(),
  /**
   * The port of the process's Prometheus metrics, served at GET /metrics (docs/metrics.md): 9464 by default (the
   * port the chart's ServiceMonitor scrapes), 0 a free port (tests; the bound port is logged), `off` none.
   */
  METRICS_PORT: z
    .union([z.literal("off"), z.coerce.number().int().min(0).max(65535)])
    .default(METRICS_PORT_DEFAULT),
  /** The interface the metrics listener binds. */
  METRICS_HOST: z.string().min(1).default("0.0.0.0"),
};

export type CommonServiceConfig = z.infer<z.ZodObject<typeof commonServiceEnv>>;

/** The validated configuration of a service: the common variables, GRPC_ADDR (gRPC services), and its own. */
export type ServiceConfig<Env extends z.ZodRawShape> = CommonServiceConfig & {
  GRPC_ADDR: string;
  GRPC_MAX_CONNECTION_AGE_MS: number;
  GRPC_MAX_CONNECTION_AGE_GRACE_MS: number;
} & z.infer<z.ZodObject<Env>>;

export interface ServiceRuntime<Env extends z.ZodRawShape, DB> {
  readonly name: string;
  readonly config: Readonly<ServiceConfig<Env>>;
  readonly log: Logger;
  /** The pool, on the service's own schema. */
  readonly db: Kysely<DB>;
  readonly bus: Bus;
  /** Wakes the outbox relay: call it after a transaction that wrote events committed. */
  readonly eventsCommitted: () => void;
  /**
   * A client of another service: every call's context is signed as this service (the tokens' issuer is
   * the service's name) for `audience`; closed by the template on stop.
   */
  client<T extends GenServiceMethods>(
    service: GenService<T>,
    o: { address: string; audience: string; deadlineMs?: number },
  ): PromiseClient<T> & { close(): void };
  /** Serves a generated gRPC service from this process (gRPC services only). */
  serve<T extends GenServiceMethods>(
    service: GenService<T>,
    impl: ServiceImpl<T>,
    options?: { preflight?: Partial<Record<keyof T & string, (request: any, call: CallContext) => void>> },
  ): void;
  /** Starts periodic singleton work (see jobs.ts); stopped by the template. */
  job(o: Omit<LeaderJobOptions, "log" | "lock"> & { lock?: boolean }): LeaderJob;
  /** Runs on shutdown, after the gRPC server drained; hooks run last-registered first. */
  onStop(fn: () => Promise<void> | void): void;
  /**
   * The service's Prometheus metrics (metrics.ts; docs/metrics.md): the kit records gRPC calls, keyed calls,
   * jobs, the pool and the outbox; a service adds its HTTP routes, queues and consumers here.
   */
  readonly metrics: ServiceMetrics;
  /**
   * Runs first on shutdown, while the servers still answer: stop taking new work (a consumer, a worker that
   * claims work). Hooks run last-registered first, with the jobs' stop, bounded by SHUTDOWN_GRACE_MS.
   */
  onDrain(fn: () => Promise<void> | void): void;
  /** True from the moment the process is asked to stop: an HTTP readiness check answers not ready. */
  draining(): boolean;
}

export interface ServiceDefinition<Env extends z.ZodRawShape, DB, Extra> {
  /** The service's name: log name, Kafka client id, registry entry. */
  name: string;
  /** Its Postgres schema (migrations and the pool's search_path). */
  schema: string;
  migrations: Record<string, Migration>;
  /** The service's own variables (zod shape), added to the common ones. */
  env: Env;
  /** A gRPC service: GRPC_ADDR defaults to 0.0.0.0:<grpcPort>, with the health service. */
  grpcPort?: number;
  /**
   * The service writes domain events to its outbox: the template creates the `outbox` table in its schema (its
   * `migrate`, before the service's own migrations) and runs the relay.
   */
  outbox?: boolean;
  /**
   * The service honours Idempotency-Keys: a call whose context carries one runs once per key, its result
   * recorded in the same transaction as its writes (idempotency.ts), and what must happen once per key outside
   * the database goes through `once` (effects.ts; docs/writes-under-a-key.md). The template creates the tables
   * (its `migrate`, before the service's own migrations) and reaps expired records. A service that does not
   * declare it refuses every call that carries an Idempotency-Key (configuration_error), never running it
   * unguarded. `{ openWithWork: true }`: the key's lock and check travel with the work's first statement, a round
   * trip less per call, for a service whose handlers do nothing outside its database before their first statement
   * (IdempotentCallOptions.openWithWork).
   */
  idempotency?: boolean | { openWithWork: boolean };
  /** Cross-field rules of the service's own variables. */
  refine?: (config: ServiceConfig<Env>, ctx: z.RefinementCtx) => void;
  /** Builds the service on the runtime; what it returns is exposed on the handle (tests use it). */
  start(rt: ServiceRuntime<Env, DB>): Promise<Extra> | Extra;
}

/** Declares a service; the identity function that gives the definition its types. */
export function defineService<Env extends z.ZodRawShape, DB, Extra = void>(
  def: ServiceDefinition<Env, DB, Extra>,
): ServiceDefinition<Env, DB, Extra> {
  return def;
}

/** The configuration schema of a service: the common variables, GRPC_ADDR for gRPC services, its own. */
export function serviceConfigSchema<Env extends z.ZodRawShape, DB, Extra>(
  def: ServiceDefinition<Env, DB, Extra>,
) {
  const grpcShape =
    def.grpcPort !== undefined
      ? {
          GRPC_ADDR: listenAddress.default(`0.0.0.0:${def.grpcPort}`),
          /** A client connection older than this is closed, so that its caller rebalances (server.ts). */
          GRPC_MAX_CONNECTION_AGE_MS: positiveInt(MAX_CONNECTION_AGE_MS_DEFAULT),
          /** The calls of a connection closed for its age get this long to finish. */
          GRPC_MAX_CONNECTION_AGE_GRACE_MS: positiveInt(MAX_CONNECTION_AGE_GRACE_MS_DEFAULT),
        }
      : {};
  return z.object({ ...commonServiceEnv, ...grpcShape, ...def.env }).superRefine((v, ctx) => {
    refineKafkaEnv(v as Parameters<typeof refineKafkaEnv>[0], ctx);
    def.refine?.(v as unknown as ServiceConfig<Env>, ctx);
  });
}

export function loadServiceConfig<Env extends z.ZodRawShape, DB, Extra>(
  def: ServiceDefinition<Env, DB, Extra>,
  env: Record<string, string | undefined> = process.env,
): Readonly<ServiceConfig<Env>> {
  return loadConfig(serviceConfigSchema(def), env) as unknown as Readonly<ServiceConfig<Env>>;
}

/**
 * Creates or brings up to date the kit's tables the definition declares (the outbox, the idempotency tables), in
 * the service's schema and before its own migrations, so that these may use them; applies the service's schema
 * migrations and the bus tables' migrations; then analyzes every table of both schemas that holds rows: a table
 * that was just changed has no statistics until autovacuum gets to it, which it never does
 * where autovacuum is off, and the planner's guesses on such a table can pick a
 * plan that reads a whole tenant for one page. Cheap on small tables; on big
 * ones ANALYZE reads a sample, not the table. An empty table is left unanalyzed
 * (analyzeSchema says why).
 */
export async function migrateService<Env extends z.ZodRawShape, DB, Extra>(
  def: ServiceDefinition<Env, DB, Extra>,
  config: { DATABASE_URL: string; BUS_DATABASE_URL?: string | undefined },
): Promise<void> {
  if (def.outbox) await migrateOutbox(config.DATABASE_URL, def.schema);
  if (def.idempotency) await migrateIdempotency(config.DATABASE_URL, def.schema);
  await migrateDatabase(config.DATABASE_URL, def.schema, def.migrations);
  const busUrl = config.BUS_DATABASE_URL ?? config.DATABASE_URL;
  await migrateBus(busUrl);
  await analyzeSchema(config.DATABASE_URL, def.schema);
  await analyzeSchema(busUrl, BUS_SCHEMA);
}

export interface ServiceHandle<Env extends z.ZodRawShape, DB, Extra> {
  name: string;
  config: Readonly<ServiceConfig<Env>>;
  /** The bound gRPC port (0 for a service without gRPC). */
  port: number;
  /** The bound port of the metrics listener (undefined with METRICS_PORT=off). */
  metricsPort?: number;
  metrics: ServiceMetrics;
  db: Kysely<DB>;
  relay?: OutboxRelay;
  /** What the service's start returned. */
  extra: Extra;
  /** Shuts down in reverse start order. Idempotent. */
  stop(): Promise<void>;
}

/** Starts a service in this process (used by `serve` and by the tests). */
export async function startService<Env extends z.ZodRawShape, DB, Extra>(
  def: ServiceDefinition<Env, DB, Extra>,
  config: Readonly<ServiceConfig<Env>>,
  log: Logger,
): Promise<ServiceHandle<Env, DB, Extra>> {
  const steps: Array<() => Promise<void> | void> = [];
  const unwind = async () => {
    for (const step of steps.reverse()) {
      try {
        await step();
      } catch (err) {
        log.error({ err }, "shutdown step failed");
      }
    }
  };
  if (config.KIT_TEST_CHECKS === "1") enableKeyedCallChecks();
  try {
    // The trust check is decided before anything starts: a gRPC service without trusted callers refuses to run.
    let verifier: ContextVerifier | undefined;
    if (def.grpcPort !== undefined) {
      if (!config.INTERNAL_AUTH_TRUSTED_KEYS)
        throw new ConfigError(
          "Invalid configuration:\n  INTERNAL_AUTH_TRUSTED_KEYS: required to serve gRPC: the callers this service trusts, " +
            '"<caller>:<base64url public key>" comma-separated (services/kit/src/internal-auth-keygen.ts makes a pair)',
        );
      verifier = createContextVerifier({ audience: def.name, trusted: config.INTERNAL_AUTH_TRUSTED_KEYS });
    }
    let signer: ContextSigner | undefined;
    const signerOf = (): ContextSigner => {
      if (signer) return signer;
      if (!config.INTERNAL_AUTH_PRIVATE_KEY)
        throw new ConfigError(
          `Invalid configuration:\n  INTERNAL_AUTH_PRIVATE_KEY: required: ${def.name} calls other services and signs its calls with it`,
        );
      return (signer = createContextSigner({
        issuer: def.name,
        privateKey: config.INTERNAL_AUTH_PRIVATE_KEY,
      }));
    };
    const db = createDb<DB>({
      url: config.DATABASE_URL,
      schema: def.schema,
      applicationName: def.name,
      max: config.DB_POOL_MAX,
      idleTimeoutMs: config.DB_POOL_IDLE_MS,
      preparedStatements: config.DB_PREPARED_STATEMENTS,
      log,
    });
    steps.push(() => db.destroy());
    const metrics = new ServiceMetrics(def.name, log);
    setDatabaseMetrics(db, metrics);
    metrics.onScrape(
      "dpp_pg_pool_connections",
      "Connections of the service's Postgres pool: in_use, idle, and waiting (callers queued for one)",
      ["state"],
      () => {
        const p = poolStats(db);
        return [
          { labels: { state: "in_use" }, value: p.inUse },
          { labels: { state: "idle" }, value: p.idle },
          { labels: { state: "waiting" }, value: p.waiting },
        ];
      },
    );
    metrics.onScrape("dpp_pg_pool_max", "The most connections the service's Postgres pool opens", [], () => [
      { value: poolStats(db).max },
    ]);
    const bus = createBus(config, log, { serviceName: def.name, db });
    steps.push(() => bus.close());
    let relay: OutboxRelay | undefined;
    if (def.outbox) {
      const r = new OutboxRelay(db, bus, log.child({ component: "outbox-relay" }), {
        schema: def.schema,
        topic: config.KAFKA_TOPIC,
        intervalMs: config.RELAY_INTERVAL_MS,
        wakeDelayMs: config.RELAY_DEBOUNCE_MS,
        observe: metrics.leaderJob(`${def.name}:outbox-relay`),
      });
      r.start();
      // Read when scraped, once for both series.
      let backlog: ReturnType<typeof outboxBacklog> | undefined;
      const read = () =>
        (backlog ??= outboxBacklog(db).finally(() => setImmediate(() => (backlog = undefined))));
      metrics.onScrape(
        "dpp_outbox_backlog",
        "Committed outbox rows not relayed to the bus yet",
        [],
        async () => [{ value: (await read()).backlog }],
      );
      metrics.onScrape(
        "dpp_outbox_oldest_unsent_age_seconds",
        "Age of the oldest committed outbox row not relayed yet (0 when none)",
        [],
        async () => [{ value: (await read()).oldestAgeSeconds }],
      );
      steps.push(() => r.stop());
      relay = r;
    }
    const jobs: LeaderJob[] = [];
    steps.push(() => Promise.all(jobs.map((j) => j.stop())).then(() => undefined));
    const hooks: Array<() => Promise<void> | void> = [];
    steps.push(async () => {
      for (const h of hooks.reverse()) await h();
    });
    const drainHooks: Array<() => Promise<void> | void> = [];
    let draining = false;
    let grpcHealth: HealthService | undefined;
    const registrations: Array<(server: grpc.Server) => string> = [];
    const rt: ServiceRuntime<Env, DB> = {
      name: def.name,
      config,
      log,
      db,
      bus,
      eventsCommitted: () => relay?.wake(),
      client: (service, o) => {
        const c = createClient(service, o.address, {
          signer: signerOf(),
          audience: o.audience,
          deadlineMs: o.deadlineMs,
          log,
          metrics,
          retry: { maxAttempts: config.GRPC_RETRY_MAX_ATTEMPTS, backoffMs: config.GRPC_RETRY_BACKOFF_MS },
          channelOptions: balancingChannelOptions({
            dnsMinTimeBetweenResolutionsMs: config.GRPC_DNS_MIN_INTERVAL_MS,
          }),
        });
        hooks.push(() => c.close());
        return c;
      },
      serve: (service, impl, serveOptions) => {
        if (!verifier) throw new Error(`${def.name} is not a gRPC service`);
        const trust = verifier;
        registrations.push((server) => {
          addService(server, service, impl, log, trust, {
            idempotency: def.idempotency
              ? {
                  db,
                  onCommitted: () => relay?.wake(),
                  openWithWork: typeof def.idempotency === "object" && def.idempotency.openWithWork,
                }
              : undefined,
            preflight: serveOptions?.preflight as Record<string, (request: any, call: CallContext) => void>,
            metrics,
          });
          return (service as unknown as { typeName: string }).typeName;
        });
      },
      job: (o) => {
        const j = startLeaderJob({
          ...o,
          log,
          lock: o.lock === false ? false : db,
          observe: metrics.leaderJob(o.name),
        });
        jobs.push(j);
        return j;
      },
      onStop: (fn) => {
        hooks.push(fn);
      },
      metrics,
      onDrain: (fn) => {
        drainHooks.push(fn);
      },
      draining: () => draining,
    };
    if (def.idempotency)
      rt.job({
        name: `${def.name}:idempotency-reaper`,
        intervalMs: config.IDEMPOTENCY_REAP_INTERVAL_MS,
        run: () => reapIdempotencyRecords(db),
        report: "idempotency records past retention reaped",
      });
    // Every service on the Postgres-table bus prunes it (one leader per service; the delete is the same whoever
    // runs it): without it, the message table only grows. The first pass waits a minute (or the interval, when
    // shorter), so that a start sends nothing more than it did.
    if (bus instanceof PgBus)
      rt.job({
        name: `${def.name}:bus-prune`,
        intervalMs: config.BUS_PRUNE_INTERVAL_MS,
        firstRunDelayMs: Math.min(config.BUS_PRUNE_INTERVAL_MS, 60_000),
        run: () => bus.prune(),
        report: "bus messages past retention pruned",
      });
    // Every subscription the service makes on its bus: how far its group is behind the topic's head.
    metrics.onScrape(
      "dpp_consumer_lag",
      "Events a consumer has not consumed yet (behind the head of what it reads)",
      ["consumer"],
      async () => {
        const samples = await Promise.all(
          bus.status().subscriptions.map(async ({ group, topic }) => {
            const lag = await bus.lag?.(group, topic);
            return lag === undefined ? undefined : { labels: { consumer: group }, value: lag };
          }),
        );
        return samples.filter((x): x is { labels: { consumer: string }; value: number } => x !== undefined);
      },
    );
    let metricsPort: number | undefined;
    if (config.METRICS_PORT !== "off") {
      const served = await serveMetrics(metrics, config.METRICS_HOST, config.METRICS_PORT, log);
      steps.unshift(() => served.close());
      metricsPort = served.port;
    }
    const extra = await def.start(rt);
    let port = 0;
    if (def.grpcPort !== undefined) {
      const server = await startGrpcServer(
        config.GRPC_ADDR,
        log,
        (s) => registrations.map((register) => register(s)),
        {
          maxConnectionAgeMs: config.GRPC_MAX_CONNECTION_AGE_MS,
          maxConnectionAgeGraceMs: config.GRPC_MAX_CONNECTION_AGE_GRACE_MS,
        },
      );
      steps.push(() => server.shutdown(config.SHUTDOWN_GRACE_MS));
      port = server.port;
      grpcHealth = server.health;
      const { SERVING, NOT_SERVING } = healthV1.HealthCheckResponse_ServingStatus;
      const report = () =>
        server.health.set(BUS_HEALTH_SERVICE, bus.status().healthy && !draining ? SERVING : NOT_SERVING);
      report();
      steps.push(bus.onStatusChange(report));
    }
    /**
     * The drain, before the unwinding: readiness off (every gRPC health entry NOT_SERVING; rt.draining() for the
     * HTTP readiness checks), no new work taken (the service's drain hooks: its consumers; every job: no new
     * pass, a running one finishes), both bounded by SHUTDOWN_GRACE_MS; then SHUTDOWN_DRAIN_DELAY_MS of answering
     * with readiness off, so that callers routed by readiness turn away; then the servers close, letting the
     * calls in flight finish (the unwinding: gRPC server, stop hooks such as an HTTP server, relay, bus, pool).
     */
    const drain = async () => {
      draining = true;
      grpcHealth?.setAll(healthV1.HealthCheckResponse_ServingStatus.NOT_SERVING);
      log.info({ delay_ms: config.SHUTDOWN_DRAIN_DELAY_MS }, "draining: not ready, taking no new work");
      const stopping = Promise.all([
        ...drainHooks.reverse().map(async (h) => {
          try {
            await h();
          } catch (err) {
            log.error({ err }, "drain step failed");
          }
        }),
        ...jobs.map((j) => j.stop()),
      ]);
      if (!(await within(stopping, config.SHUTDOWN_GRACE_MS)))
        log.warn(
          { grace_ms: config.SHUTDOWN_GRACE_MS },
          "consumers or jobs still running after the grace period",
        );
      if (config.SHUTDOWN_DRAIN_DELAY_MS > 0)
        await new Promise((resolve) => setTimeout(resolve, config.SHUTDOWN_DRAIN_DELAY_MS));
      await unwind();
    };
    let stopping: Promise<void> | undefined;
    return {
      name: def.name,
      config,
      port,
      metricsPort,
      metrics,
      db,
      relay,
      extra,
      stop: () => (stopping ??= drain()),
    };
  } catch (err) {
    await unwind();
    throw err;
  }
}

/** Whether `work` settles within `ms`. */
function within(work: Promise<unknown>, ms: number): Promise<boolean> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), ms);
    timer.unref();
    work.then(
      () => {
        clearTimeout(timer);
        resolve(true);
      },
      () => {
        clearTimeout(timer);
        resolve(true);
      },
    );
  });
}

/**
 * The longest a stop may take before the process exits anyway: the drain's steps (each bounded by
 * SHUTDOWN_GRACE_MS: consumers and jobs, the gRPC server, the HTTP server), its delay, and a margin for the pools.
 */
export function shutdownBoundMs(config: {
  SHUTDOWN_GRACE_MS: number;
  SHUTDOWN_DRAIN_DELAY_MS: number;
}): number {
  return config.SHUTDOWN_DRAIN_DELAY_MS + 3 * config.SHUTDOWN_GRACE_MS + 5000;
}

/**
 * The command line of a service: `migrate` or `serve` (the default). The
 * configuration is read and validated before anything else; a bad variable
 * stops the process with exit code 2 and a message naming it.
 */
export function runService<Env extends z.ZodRawShape, DB, Extra>(
  def: ServiceDefinition<Env, DB, Extra>,
  argv = process.argv.slice(2),
): void {
  const command = argv[0] ?? "serve";
  let config: Readonly<ServiceConfig<Env>>;
  try {
    config = loadServiceConfig(def);
  } catch (err) {
    createLogger(def.name).fatal(err instanceof ConfigError ? err.message : String(err));
    process.exit(2);
  }
  const log = createLogger(def.name, config.LOG_LEVEL, config.LOG_FILE);
  if (command !== "migrate" && command !== "serve") {
    log.fatal({ command }, "unknown command; expected 'serve' or 'migrate'");
    process.exit(2);
  }
  const work =
    command === "migrate"
      ? migrateService(def, config).then(() => {
          log.info("migrations applied");
          process.exit(0);
        })
      : startService(def, config, log).then((handle) =>
          onShutdownSignal(log, () => handle.stop(), { forceAfterMs: shutdownBoundMs(config) }),
        );
  work.catch((err: unknown) => {
    if (err instanceof ConfigError) {
      // A configuration problem is the operator's to fix: say what, without a stack trace.
      log.fatal(err.message);
      process.exit(2);
    }
    log.fatal({ err }, `${command} failed`);
    process.exit(1);
  });
}
