/**
 * The Kafka adapter of the bus interface (production), with kafkajs 2.2.4.
 * Nothing outside this package imports kafkajs: moving to another client
 * touches this file only. Decision record: docs/decisions/0016-kafka-in-production.md.
 *
 * Guarantees, the same as every adapter (see bus.ts):
 * - publish resolves only after every broker in the in-sync set acknowledged
 *   (acks = all) through an idempotent producer with one request in flight, so
 *   a retried send is neither duplicated nor reordered in its partition;
 * - the message key is the organization id: one organization's events stay in
 *   one partition, in publish order;
 * - a consumer group's offsets are committed only after the handler (the feed
 *   transaction) resolved; a handler that throws commits nothing, and the
 *   batch is fetched again.
 *
 * Failures and recovery (nothing here needs a restart of the process):
 * - kafkajs retries each request a few times within about two seconds
 *   (`kafkaClientConfig`); past that, the caller's backoff takes over: the
 *   outbox relay's job for publishing, the subscription's job for consuming.
 *   Both are leader jobs (the kit's jobs.ts): exponential backoff with jitter, capped,
 *   the first failure logged at once and repeats at most every 30 s.
 * - A publish that failed leaves the producer's sequence numbers in doubt, so
 *   the producer is replaced (a new producer id) and the topic is checked
 *   again before the next publish.
 * - A subscription is supervised by its job: it joins the group in the
 *   background (subscribe() does not wait for the join), counts as running
 *   once it joined and handled what it fetched, and is restarted with backoff when
 *   kafkajs reports a crash (kafkajs' own restart, every 300 ms without
 *   backoff, is switched off). While running, the job checks every
 *   `topicCheckIntervalMs` that the topic still exists.
 * - A missing topic is created again with the configured partitions and
 *   replication factor, or, when the service may not create it
 *   (KAFKA_TOPIC_CREATE=false, or the broker refuses), reported by name until
 *   someone does.
 * - kafkajs' own log lines go through the service's logger, each distinct
 *   line at once and then at most once per `repeatLogMs` (with a count).
 */
import fs from "node:fs";
import { context } from "@opentelemetry/api";
import { suppressTracing } from "@opentelemetry/core";
import {
  ConfigResourceTypes,
  Kafka,
  Partitioners,
  logLevel as kafkaLogLevel,
  type Admin,
  type Consumer,
  type KafkaConfig,
  type Producer,
  type SASLOptions,
  type LogEntry,
} from "kafkajs";
import {
  BusStatusTracker,
  type Bus,
  type BusMessage,
  type BusStatus,
  type SubscribeOptions,
  type Subscription,
} from "./bus";
import { ConfigError, startLeaderJob, type LeaderJob, type Logger } from "@dpp/kit/base";
import type { KafkaEnv } from "./kafka-config";

/** The part of a kafkajs client the adapter uses (tests replace it with a fake). */
export type KafkaClient = Pick<Kafka, "producer" | "consumer" | "admin">;

/**
 * Settings for brokers that cannot serve the production settings, in tests
 * only (librdkafka's mock cluster: it answers neither CreateTopics nor the
 * InitProducerId of kafkajs' idempotent producer). No variable reaches them.
 */
export interface KafkaTestOnlySettings {
  /** A plain producer (acks = all, one request in flight) instead of the idempotent one. */
  nonIdempotentProducer?: boolean;
  /** Topics are created by the broker on first use (auto-creation) instead of through the admin API. */
  brokerCreatesTopics?: boolean;
}

export interface KafkaBusOptions {
  brokers: string[];
  clientId: string;
  /** Partitions of a topic the adapter creates. */
  topicPartitions: number;
  /** Replication factor of a created topic; unset: the broker's default.replication.factor. */
  replicationFactor?: number;
  /** false: never create a topic; a missing one is reported until it exists. */
  createTopics: boolean;
  /** Consumer-group session timeout (ms): a consumer that stops heartbeating loses its partitions after it. */
  sessionTimeoutMs: number;
  /** How long a rebalance waits for the members to rejoin (ms). */
  rebalanceTimeoutMs: number;
  /** TLS: true, or the CA bundle (PEM) to trust. */
  ssl?: boolean | { ca: string[] };
  sasl?: SASLOptions;
  log: Logger;
  /** How the kafkajs client is made; tests pass a fake. */
  createClient?: (config: KafkaConfig) => KafkaClient;
  /** kafkajs' own retries of one request (ms); the callers' backoff comes after. */
  retry?: { initialRetryTime: number; maxRetryTime: number; retries: number };
  /** A running subscription checks its topic this often (default 30 s). */
  topicCheckIntervalMs?: number;
  /** Backoff of a subscription's restarts: first delay and cap (defaults 500 ms and 30 s). */
  backoffMinMs?: number;
  backoffMaxMs?: number;
  /** A repeated failure or kafkajs log line is logged at most this often (default 30 s). */
  repeatLogMs?: number;
  testOnly?: KafkaTestOnlySettings;
}

/** kafkajs' retries of one request: about two seconds of waiting, then the caller's backoff. */
export const KAFKA_REQUEST_RETRY = { initialRetryTime: 250, maxRetryTime: 2_000, retries: 3 };

/**
 * kafkajs warns on every producer it makes that limited retries "may invalidate
 * EoS guarantees": a send that gave up leaves the producer's sequence numbers
 * in doubt. This adapter never sends again through such a producer (it is
 * replaced after any failed send), so the warning does not apply and is not
 * logged; unlimited retries instead would let a send hang forever.
 */
const IDEMPOTENT_RETRIES_WARNING =
  "Limiting retries for the idempotent producer may invalidate EoS guarantees";

/** kafkajs log lines through the service's logger: each distinct line at once, then at most once per `repeatMs`. */
export function rateLimitedLogCreator(log: Logger, repeatMs: number, now: () => number = Date.now) {
  const seen = new Map<string, { at: number; suppressed: number }>();
  return () =>
    ({ level, namespace, log: entry }: LogEntry) => {
      const { message, ...rest } = entry;
      if (message === IDEMPOTENT_RETRIES_WARNING) return;
      const key = `${namespace}|${message}`;
      const t = now();
      const last = seen.get(key);
      if (last && t - last.at < repeatMs) {
        last.suppressed++;
        return;
      }
      const fields = { namespace, ...rest, ...(last?.suppressed ? { repeated: last.suppressed } : {}) };
      seen.set(key, { at: t, suppressed: 0 });
      if (seen.size > 500) seen.delete(seen.keys().next().value!);
      if (level <= kafkaLogLevel.ERROR) log.error(fields, message);
      else log.warn(fields, message);
    };
}

/** What kafkajs gets: brokers, client id, TLS, SASL, short retries, rate-limited logging. */
export function kafkaClientConfig(o: KafkaBusOptions): KafkaConfig {
  return {
    clientId: o.clientId,
    brokers: o.brokers,
    ssl: o.ssl,
    sasl: o.sasl,
    connectionTimeout: 5_000,
    requestTimeout: 30_000,
    // Exponential backoff with jitter (kafkajs' factor 0.2, multiplier 2), short: see KAFKA_REQUEST_RETRY.
    retry: o.retry ?? KAFKA_REQUEST_RETRY,
    logLevel: kafkaLogLevel.WARN,
    logCreator: rateLimitedLogCreator(o.log.child({ component: "kafkajs" }), o.repeatLogMs ?? 30_000),
  };
}

/** Builds the adapter options from validated variables. */
export function kafkaBusOptions(env: KafkaEnv, log: Logger, serviceName = "dpp"): KafkaBusOptions {
  if (!env.KAFKA_BROKERS) throw new ConfigError("KAFKA_BROKERS is not set");
  let ssl: KafkaBusOptions["ssl"] = env.KAFKA_SSL;
  if (env.KAFKA_SSL_CA) {
    const ca = env.KAFKA_SSL_CA.includes("-----BEGIN") ? env.KAFKA_SSL_CA : readCa(env.KAFKA_SSL_CA);
    ssl = { ca: [ca] };
  }
  return {
    brokers: env.KAFKA_BROKERS,
    clientId: env.KAFKA_CLIENT_ID ?? serviceName,
    topicPartitions: env.KAFKA_TOPIC_PARTITIONS,
    replicationFactor: env.KAFKA_TOPIC_REPLICATION_FACTOR,
    createTopics: env.KAFKA_TOPIC_CREATE,
    sessionTimeoutMs: env.KAFKA_SESSION_TIMEOUT_MS,
    rebalanceTimeoutMs: env.KAFKA_REBALANCE_TIMEOUT_MS,
    ssl,
    sasl: env.KAFKA_SASL_MECHANISM
      ? ({
          mechanism: env.KAFKA_SASL_MECHANISM,
          username: env.KAFKA_SASL_USERNAME!,
          password: env.KAFKA_SASL_PASSWORD!,
        } as SASLOptions)
      : undefined,
    log,
  };
}

function readCa(path: string): string {
  try {
    return fs.readFileSync(path, "utf8");
  } catch (err) {
    throw new ConfigError(
      `Invalid configuration:\n  KAFKA_SSL_CA: not PEM text and not a readable file (${(err as Error).message})`,
    );
  }
}

/** The topic does not exist and this service may not (or could not be allowed to) create it. */
export class KafkaTopicMissingError extends Error {
  constructor(
    readonly topic: string,
    reason: string,
  ) {
    super(`kafka topic "${topic}" does not exist: ${reason}`);
    this.name = "KafkaTopicMissingError";
  }
}

/** Broker error types meaning "not allowed" (kafkajs' `type` of a protocol error). */
const AUTHORIZATION_ERRORS = new Set([
  "TOPIC_AUTHORIZATION_FAILED",
  "CLUSTER_AUTHORIZATION_FAILED",
  "POLICY_VIOLATION",
]);

/** How many messages of a fetched batch go to the handler at once (one commit each). */
const HANDLER_CHUNK = 100;

export class KafkaBus implements Bus {
  private readonly kafka: KafkaClient;
  private readonly log: Logger;
  private producer?: Promise<Producer>;
  /** Topics known to exist, by the time they were last checked. */
  private readonly topics = new Map<string, Promise<"exists" | "created">>();
  private readonly subscriptions = new Set<KafkaSubscription>();
  private readonly tracker: BusStatusTracker;
  private closed = false;

  constructor(readonly o: KafkaBusOptions) {
    this.log = o.log.child({ component: "kafka-bus" });
    const config = kafkaClientConfig(o);
    this.kafka = o.createClient ? o.createClient(config) : new Kafka(config);
    this.tracker = new BusStatusTracker("kafka", this.log);
  }

  status(): BusStatus {
    return this.tracker.status();
  }

  onStatusChange(listener: () => void): () => void {
    return this.tracker.onChange(listener);
  }

  /**
   * Makes sure the topic exists: created when missing (with the configured
   * partitions and replication factor) or, when this service may not create
   * it, a KafkaTopicMissingError naming it. The answer is cached until
   * `recheck` is set (subscriptions' periodic check) or a publish failed.
   */
  ensureTopic(topic: string, o: { recheck?: boolean } = {}): Promise<"exists" | "created"> {
    if (o.recheck) this.topics.delete(topic);
    let ready = this.topics.get(topic);
    if (!ready) {
      ready = this.createTopicIfMissing(topic).catch((err: unknown) => {
        this.topics.delete(topic); // try again next time
        throw err;
      });
      this.topics.set(topic, ready);
    }
    return ready;
  }

  private async createTopicIfMissing(topic: string): Promise<"exists" | "created"> {
    if (this.o.testOnly?.brokerCreatesTopics) return "exists";
    const admin: Admin = this.kafka.admin();
    await admin.connect();
    try {
      const existing = await admin.listTopics();
      if (existing.includes(topic)) return "exists";
      if (!this.o.createTopics)
        throw new KafkaTopicMissingError(
          topic,
          `KAFKA_TOPIC_CREATE=false: create it (${this.o.topicPartitions} partitions), it is checked again with backoff`,
        );
      const replicationFactor = await this.replicationFactor(admin);
      try {
        await admin.createTopics({
          waitForLeaders: true,
          topics: [{ topic, numPartitions: this.o.topicPartitions, replicationFactor }],
        });
      } catch (err) {
        const type = (err as { type?: string }).type;
        if (type && AUTHORIZATION_ERRORS.has(type))
          throw new KafkaTopicMissingError(
            topic,
            `the broker refused to create it (${type}): create it (${this.o.topicPartitions} partitions) or allow this client to; it is checked again with backoff`,
          );
        throw err;
      }
      this.log.warn(
        { topic, partitions: this.o.topicPartitions, replicationFactor },
        "kafka topic was missing; created",
      );
      return "created";
    } finally {
      await admin.disconnect().catch(() => undefined);
    }
  }

  /**
   * KAFKA_TOPIC_REPLICATION_FACTOR, or the broker's default.replication.factor
   * read from the broker (kafkajs would send -1, which brokers before 2.4 do
   * not read as "the default"); when the broker does not say, min(3, brokers).
   */
  private async replicationFactor(admin: Admin): Promise<number> {
    if (this.o.replicationFactor) return this.o.replicationFactor;
    const { brokers } = await admin.describeCluster();
    const fallback = Math.max(1, Math.min(3, brokers.length));
    try {
      const res = await admin.describeConfigs({
        includeSynonyms: false,
        resources: [
          {
            type: ConfigResourceTypes.BROKER,
            name: String(brokers[0]?.nodeId ?? 0),
            configNames: ["default.replication.factor"],
          },
        ],
      });
      const value = Number(
        res.resources[0]?.configEntries.find((e) => e.configName === "default.replication.factor")
          ?.configValue,
      );
      return Number.isInteger(value) && value > 0 ? value : fallback;
    } catch (err) {
      this.log.warn(
        { err: { message: (err as Error).message }, replicationFactor: fallback },
        "could not read the broker's default.replication.factor; using min(3, brokers)",
      );
      return fallback;
    }
  }

  private getProducer(): Promise<Producer> {
    this.producer ??= (async () => {
      const idempotent = !this.o.testOnly?.nonIdempotentProducer;
      const producer = this.kafka.producer({
        idempotent,
        maxInFlightRequests: 1,
        allowAutoTopicCreation: this.o.testOnly?.brokerCreatesTopics ?? false,
        createPartitioner: Partitioners.DefaultPartitioner,
      });
      producer.on(producer.events.DISCONNECT, () => {
        if (!this.closed) this.log.warn("kafka producer disconnected; the next publish reconnects");
        if (this.producer === current) this.producer = undefined;
      });
      await producer.connect();
      return producer;
    })().catch((err: unknown) => {
      this.producer = undefined;
      throw err;
    });
    const current = this.producer;
    return current;
  }

  /** Drops the producer after a failed send: its sequence numbers are in doubt; the next publish makes a new one. */
  private retireProducer(): void {
    const old = this.producer;
    this.producer = undefined;
    void old?.then((p) => p.disconnect()).catch(() => undefined);
  }

  async publish(topic: string, messages: BusMessage[]): Promise<void> {
    if (messages.length === 0) return;
    if (this.closed) throw new Error("bus closed");
    try {
      await this.ensureTopic(topic);
      const producer = await this.getProducer();
      // The messages carry their own trace context (the outbox relay's span per event, whose parent is the
      // request that wrote the event). kafkajs' instrumentation would replace each message's traceparent with
      // one send span for the whole batch: the send runs with tracing suppressed.
      await context.with(suppressTracing(context.active()), () =>
        producer.send({
          topic,
          acks: -1,
          messages: messages.map((m) => ({ key: m.key, value: m.value, headers: m.headers })),
        }),
      );
      this.tracker.publishSucceeded();
    } catch (err) {
      this.topics.delete(topic);
      this.retireProducer();
      this.tracker.publishFailed(err);
      throw err;
    }
  }

  async lag(group: string, topic: string): Promise<number | undefined> {
    for (const sub of this.subscriptions) if (sub.group === group && sub.topic === topic) return sub.lag();
    return undefined;
  }

  async subscribe(s: SubscribeOptions): Promise<Subscription> {
    if (this.closed) throw new Error("bus closed");
    const sub = new KafkaSubscription(this, this.kafka, this.tracker, s);
    this.subscriptions.add(sub);
    sub.start();
    return {
      status: () => this.tracker.get(sub),
      stop: async () => {
        if (!this.subscriptions.delete(sub)) return;
        await sub.stop();
      },
    };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const subs = [...this.subscriptions];
    this.subscriptions.clear();
    await Promise.all(subs.map((s) => s.stop().catch(() => undefined)));
    const producer = await this.producer?.catch(() => undefined);
    this.producer = undefined;
    await producer?.disconnect().catch(() => undefined);
    this.tracker.close();
  }
}

/**
 * One consumer-group subscription, supervised by a leader job without a lock
 * (every replica runs its own consumer). Each pass: when no consumer runs (not
 * started yet, crashed), check the topic, start a consumer and wait until it
 * joined the group and completed a fetch, failing the pass if it crashes
 * first; when one runs, check that the topic still exists. A failed pass is
 * retried by the job with exponential backoff and jitter (capped), so a
 * consumer that keeps crashing is restarted less and less often; the first
 * failure is logged at once, repeats at most every repeatLogMs.
 */
class KafkaSubscription {
  private consumer?: Consumer;
  private crashed?: Error;
  private stopped = false;
  private job?: LeaderJob;
  private readonly log: Logger;
  /** Settles the wait of a starting pass: joined and fetched, crashed, or stopped. */
  private settle?: (outcome: { ok: true } | { ok: false; err: Error }) => void;
  /** Messages left behind the head of each partition this consumer fetched from, as of its last batch. */
  private readonly lags = new Map<number, bigint>();

  get group(): string {
    return this.s.group;
  }

  get topic(): string {
    return this.s.topic;
  }

  /** The sum over the partitions this consumer fetched from; undefined before its first batch. */
  lag(): number | undefined {
    if (this.lags.size === 0) return undefined;
    let sum = 0n;
    for (const l of this.lags.values()) sum += l > 0n ? l : 0n;
    return Number(sum);
  }

  constructor(
    private readonly bus: KafkaBus,
    private readonly kafka: KafkaClient,
    private readonly tracker: BusStatusTracker,
    private readonly s: SubscribeOptions,
  ) {
    this.log = bus.o.log.child({ component: "kafka-bus", group: s.group, topic: s.topic });
    tracker.add(this, s.group, s.topic);
  }

  start(): void {
    const o = this.bus.o;
    this.job = startLeaderJob({
      name: `kafka-consumer:${this.s.group}:${this.s.topic}`,
      intervalMs: o.topicCheckIntervalMs ?? 30_000,
      lock: false,
      log: this.log,
      run: () => this.pass(),
      backoffMinMs: o.backoffMinMs ?? 500,
      backoffMaxMs: o.backoffMaxMs ?? 30_000,
      repeatLogMs: o.repeatLogMs ?? 30_000,
    });
  }

  private async pass(): Promise<void> {
    if (this.stopped) return;
    try {
      if (this.consumer && !this.crashed) {
        // Running: the topic may have been deleted under it.
        const topic = await this.bus.ensureTopic(this.s.topic, { recheck: true });
        if (topic === "exists") return;
        this.log.warn("topic was created again; restarting the consumer");
      }
      await this.restart();
      if (!this.stopped) this.tracker.set(this, "running");
    } catch (err) {
      if (this.stopped) return;
      // The next pass starts a consumer again (this one, if any, never ran).
      this.crashed ??= err instanceof Error ? err : new Error(String(err));
      this.tracker.set(this, "retrying", err);
      throw err;
    }
  }

  private async restart(): Promise<void> {
    await this.disconnect();
    this.crashed = undefined;
    await this.bus.ensureTopic(this.s.topic, { recheck: true });
    if (this.stopped) return;
    const o = this.bus.o;
    const consumer = this.kafka.consumer({
      groupId: this.s.group,
      allowAutoTopicCreation: o.testOnly?.brokerCreatesTopics ?? false,
      sessionTimeout: o.sessionTimeoutMs,
      rebalanceTimeout: o.rebalanceTimeoutMs,
      heartbeatInterval: Math.min(3_000, Math.floor(o.sessionTimeoutMs / 3)),
      // kafkajs would restart a crashed consumer every 300 ms without backoff: this job restarts it instead.
      retry: { ...(o.retry ?? KAFKA_REQUEST_RETRY), restartOnFailure: async () => false },
    });
    this.consumer = consumer;
    const settled = new Promise<{ ok: true } | { ok: false; err: Error }>((resolve) => {
      this.settle = resolve;
    });
    // Running: joined, and a batch was handled, or a second fetch completed (kafkajs fetches again only
    // after the previous fetch's batches were handled). A handler that keeps failing never gets there: its
    // crash fails this pass, so the restarts back off.
    const fetches = new Map<unknown, number>(); // per broker: each fetches again once its batches were handled
    consumer.on(consumer.events.GROUP_JOIN, () => fetches.clear());
    consumer.on(consumer.events.FETCH, (e) => {
      const node = (e as { payload?: { nodeId?: unknown } }).payload?.nodeId;
      const n = (fetches.get(node) ?? 0) + 1;
      fetches.set(node, n);
      if (n >= 2) this.settle?.({ ok: true });
    });
    consumer.on(consumer.events.END_BATCH_PROCESS, () => this.settle?.({ ok: true }));
    consumer.on(consumer.events.CRASH, (e) => {
      if (this.consumer !== consumer) return;
      const err = e.payload.error;
      this.crashed = err;
      this.settle?.({ ok: false, err });
      if (!this.stopped) {
        this.tracker.set(this, "retrying", err);
        this.job?.wake();
      }
    });
    await consumer.connect();
    await consumer.subscribe({ topics: [this.s.topic], fromBeginning: true });
    await consumer.run({
      autoCommit: false,
      eachBatchAutoResolve: false,
      partitionsConsumedConcurrently: 1,
      eachBatch: async ({ batch, resolveOffset, heartbeat, isRunning, isStale }) => {
        // What the group has left of this partition, as of this batch's fetch (the lag metric).
        const head = /^\d+$/.test(String(batch.highWatermark)) ? BigInt(batch.highWatermark) : undefined;
        const first = batch.messages[0];
        if (first && head !== undefined) this.lags.set(batch.partition, head - BigInt(first.offset));
        for (let i = 0; i < batch.messages.length; i += HANDLER_CHUNK) {
          if (!isRunning() || isStale()) return;
          const chunk = batch.messages.slice(i, i + HANDLER_CHUNK);
          // Throws on failure: nothing of this chunk is resolved or committed.
          await this.s.handler(chunk.map(toBusMessage));
          const last = chunk[chunk.length - 1]!.offset;
          resolveOffset(last);
          await consumer.commitOffsets([
            { topic: batch.topic, partition: batch.partition, offset: (BigInt(last) + 1n).toString() },
          ]);
          if (head !== undefined) this.lags.set(batch.partition, head - (BigInt(last) + 1n));
          await heartbeat();
        }
      },
    });
    // run() resolves once the group is joined.
    const limitMs = 2 * o.rebalanceTimeoutMs;
    let timer: NodeJS.Timeout | undefined;
    const outcome = await Promise.race([
      settled,
      new Promise<{ ok: false; err: Error }>((resolve) => {
        timer = setTimeout(
          () =>
            resolve({ ok: false, err: new Error(`consumer did not join and fetch within ${limitMs} ms`) }),
          limitMs,
        );
        timer.unref();
      }),
    ]).finally(() => clearTimeout(timer));
    this.settle = undefined;
    if (!outcome.ok && !this.stopped) throw outcome.err;
  }

  private async disconnect(): Promise<void> {
    const c = this.consumer;
    this.consumer = undefined;
    await c?.disconnect().catch(() => undefined);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.settle?.({ ok: true });
    await this.disconnect();
    await this.job?.stop();
    await this.disconnect();
    this.tracker.set(this, "stopped");
    this.tracker.remove(this);
  }
}

function toBusMessage(m: {
  key: Buffer | null;
  value: Buffer | null;
  headers?: Record<string, Buffer | string | (Buffer | string)[] | undefined>;
}): BusMessage {
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(m.headers ?? {})) {
    if (v === undefined) continue;
    const one = Array.isArray(v) ? v[v.length - 1]! : v;
    headers[k] = one.toString();
  }
  return { key: m.key?.toString() ?? "", value: m.value?.toString() ?? "", headers };
}
