/**
 * The Kafka adapter of the bus interface (production), with kafkajs 2.2.4.
 * Nothing outside the kit imports kafkajs: moving to another client touches
 * this file only.
 *
 * Guarantees, the same as every adapter (see bus.ts):
 * - publish resolves only after every broker in the in-sync set acknowledged
 *   (acks = all) through an idempotent producer with one request in flight, so
 *   a retried send is neither duplicated nor reordered in its partition;
 * - the message key is the organization id: one organization's events stay in
 *   one partition, in publish order;
 * - a consumer group's offsets are committed only after the handler (the feed
 *   transaction) resolved; a handler that throws commits nothing, and the
 *   batch is fetched again (kafkajs retries it with backoff, then restarts the
 *   consumer from the last committed offset);
 * - broker loss: kafkajs reconnects with exponential backoff (the retry
 *   options below); a publish that still fails rejects, and the outbox relay
 *   keeps the rows and retries later.
 */
import fs from "node:fs";
import {
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
import type { Bus, BusMessage, SubscribeOptions, Subscription } from "./bus";
import { ConfigError } from "./config";
import type { KafkaEnv } from "./kafka-config";
import type { Logger } from "./logger";

/** The part of a kafkajs client the adapter uses (tests replace it: no broker can be installed here). */
export type KafkaClient = Pick<Kafka, "producer" | "consumer" | "admin">;

export interface KafkaBusOptions {
  brokers: string[];
  clientId: string;
  /** Partitions of a topic the adapter creates. */
  topicPartitions: number;
  /** Replication factor of a created topic; the broker default when unset. */
  replicationFactor?: number;
  /** TLS: true, or the CA bundle (PEM) to trust. */
  ssl?: boolean | { ca: string[] };
  sasl?: SASLOptions;
  log: Logger;
  /** How the kafkajs client is made; tests pass a fake. */
  createClient?: (config: KafkaConfig) => KafkaClient;
  /** Reconnect/backoff of every kafkajs request (ms). */
  retry?: { initialRetryTime: number; maxRetryTime: number; retries: number };
}

/** What kafkajs gets: brokers, client id, TLS, SASL, retries with exponential backoff. */
export function kafkaClientConfig(o: KafkaBusOptions): KafkaConfig {
  const log = o.log.child({ component: "kafkajs" });
  return {
    clientId: o.clientId,
    brokers: o.brokers,
    ssl: o.ssl,
    sasl: o.sasl,
    connectionTimeout: 5_000,
    requestTimeout: 30_000,
    // Exponential backoff with jitter (kafkajs' factor 0.2, multiplier 2), capped.
    retry: o.retry ?? { initialRetryTime: 300, maxRetryTime: 10_000, retries: 8 },
    logLevel: kafkaLogLevel.WARN,
    logCreator:
      () =>
      ({ level, log: entry }: LogEntry) => {
        const { message, ...rest } = entry;
        if (level <= kafkaLogLevel.ERROR) log.error(rest, message);
        else log.warn(rest, message);
      },
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

/** How many messages of a fetched batch go to the handler at once (one commit each). */
const HANDLER_CHUNK = 100;

export class KafkaBus implements Bus {
  private readonly kafka: KafkaClient;
  private readonly log: Logger;
  private producer?: Promise<Producer>;
  private readonly topics = new Map<string, Promise<void>>();
  private readonly consumers = new Set<Consumer>();
  private closed = false;

  constructor(private readonly o: KafkaBusOptions) {
    this.log = o.log.child({ component: "kafka-bus" });
    const config = kafkaClientConfig(o);
    this.kafka = o.createClient ? o.createClient(config) : new Kafka(config);
  }

  /** Creates the topic with the configured partitions when it does not exist yet (once per process). */
  ensureTopic(topic: string): Promise<void> {
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

  private async createTopicIfMissing(topic: string): Promise<void> {
    const admin: Admin = this.kafka.admin();
    await admin.connect();
    try {
      const existing = await admin.listTopics();
      if (existing.includes(topic)) return;
      const created = await admin.createTopics({
        waitForLeaders: true,
        topics: [
          {
            topic,
            numPartitions: this.o.topicPartitions,
            ...(this.o.replicationFactor ? { replicationFactor: this.o.replicationFactor } : {}),
          },
        ],
      });
      this.log.info({ topic, partitions: this.o.topicPartitions, created }, "kafka topic ensured");
    } finally {
      await admin.disconnect().catch(() => undefined);
    }
  }

  private getProducer(): Promise<Producer> {
    this.producer ??= (async () => {
      const producer = this.kafka.producer({
        idempotent: true,
        maxInFlightRequests: 1,
        allowAutoTopicCreation: false,
        createPartitioner: Partitioners.DefaultPartitioner,
      });
      producer.on(producer.events.DISCONNECT, () => {
        if (!this.closed) this.log.warn("kafka producer disconnected; the next publish reconnects");
        this.producer = undefined;
      });
      await producer.connect();
      return producer;
    })().catch((err: unknown) => {
      this.producer = undefined;
      throw err;
    });
    return this.producer;
  }

  async publish(topic: string, messages: BusMessage[]): Promise<void> {
    if (messages.length === 0) return;
    if (this.closed) throw new Error("bus closed");
    await this.ensureTopic(topic);
    const producer = await this.getProducer();
    await producer.send({
      topic,
      acks: -1,
      messages: messages.map((m) => ({ key: m.key, value: m.value, headers: m.headers })),
    });
  }

  async subscribe(s: SubscribeOptions): Promise<Subscription> {
    if (this.closed) throw new Error("bus closed");
    await this.ensureTopic(s.topic);
    const log = this.log.child({ group: s.group, topic: s.topic });
    const consumer = this.kafka.consumer({
      groupId: s.group,
      allowAutoTopicCreation: false,
      // After the retries of a failing batch, restart the consumer (from the committed offsets).
      retry: { restartOnFailure: async () => true },
    });
    consumer.on(consumer.events.CRASH, (e) =>
      log.error(
        { err: { message: e.payload.error.message, name: e.payload.error.name }, restart: e.payload.restart },
        "kafka consumer crashed",
      ),
    );
    consumer.on(consumer.events.DISCONNECT, () => {
      if (!this.closed) log.warn("kafka consumer disconnected");
    });
    await consumer.connect();
    await consumer.subscribe({ topics: [s.topic], fromBeginning: true });
    await consumer.run({
      autoCommit: false,
      eachBatchAutoResolve: false,
      partitionsConsumedConcurrently: 1,
      eachBatch: async ({ batch, resolveOffset, heartbeat, isRunning, isStale }) => {
        for (let i = 0; i < batch.messages.length; i += HANDLER_CHUNK) {
          if (!isRunning() || isStale()) return;
          const chunk = batch.messages.slice(i, i + HANDLER_CHUNK);
          // Throws on failure: nothing of this chunk is resolved or committed.
          await s.handler(chunk.map(toBusMessage));
          const last = chunk[chunk.length - 1]!.offset;
          resolveOffset(last);
          await consumer.commitOffsets([
            { topic: batch.topic, partition: batch.partition, offset: (BigInt(last) + 1n).toString() },
          ]);
          await heartbeat();
        }
      },
    });
    this.consumers.add(consumer);
    return {
      stop: async () => {
        if (!this.consumers.delete(consumer)) return;
        await consumer.disconnect();
      },
    };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const consumers = [...this.consumers];
    this.consumers.clear();
    await Promise.all(consumers.map((c) => c.disconnect().catch(() => undefined)));
    const producer = await this.producer?.catch(() => undefined);
    this.producer = undefined;
    await producer?.disconnect().catch(() => undefined);
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
