/**
 * Boundary tests of the Kafka adapter (src/kafka-bus.ts).
 *
 * No Kafka broker can be installed on the development and CI machines, so the
 * kafkajs client is REPLACED here by a fake that records every call (the
 * adapter takes a `createClient` option for that). These tests check what the
 * adapter asks of kafkajs: topic, key, producer settings, topic creation,
 * consumer-group settings, when offsets are committed, TLS/SASL mapping and
 * shutdown. They do not prove kafkajs or a broker behave; the bus contract
 * suite (test/contract) does that when KAFKA_BROKERS points at a broker.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { KafkaConfig } from "kafkajs";
import { PgBus } from "../src/bus";
import { createBus } from "../src/bus-factory";
import { ConfigError } from "../src/config";
import { DOMAIN_EVENTS_TOPIC } from "../src/events";
import { KafkaBus, kafkaBusOptions, kafkaClientConfig, type KafkaClient } from "../src/kafka-bus";
import { loadKafkaEnv } from "../src/kafka-config";
import { createLogger } from "../src/logger";
import type { BusMessage } from "../src/bus";

const log = createLogger("kafka-bus-test", "silent");

type Call = [string, ...unknown[]];

interface FakeBatchMessage {
  offset: string;
  key: Buffer | null;
  value: Buffer | null;
  headers?: Record<string, Buffer | string | undefined>;
}

/** A recording stand-in for the kafkajs client. */
class FakeKafka {
  calls: Call[] = [];
  config?: KafkaConfig;
  existingTopics: string[] = [];
  failSend: Error | null = null;
  failCreateTopics: Error | null = null;
  producerHandlers = new Map<string, () => void>();
  eachBatch?: (args: unknown) => Promise<void>;

  client(): (config: KafkaConfig) => KafkaClient {
    return (config) => {
      this.config = config;
      return this as unknown as KafkaClient;
    };
  }

  admin() {
    return {
      connect: async () => void this.calls.push(["admin.connect"]),
      listTopics: async () => {
        this.calls.push(["admin.listTopics"]);
        return [...this.existingTopics];
      },
      createTopics: async (o: { topics: { topic: string }[] }) => {
        this.calls.push(["admin.createTopics", o]);
        if (this.failCreateTopics) throw this.failCreateTopics;
        this.existingTopics.push(...o.topics.map((t) => t.topic));
        return true;
      },
      disconnect: async () => void this.calls.push(["admin.disconnect"]),
    };
  }

  producer(config: unknown) {
    this.calls.push(["producer", config]);
    return {
      events: { DISCONNECT: "producer.disconnect" },
      on: (event: string, fn: () => void) => void this.producerHandlers.set(event, fn),
      connect: async () => void this.calls.push(["producer.connect"]),
      send: async (record: unknown) => {
        this.calls.push(["producer.send", record]);
        if (this.failSend) throw this.failSend;
        return [];
      },
      disconnect: async () => void this.calls.push(["producer.disconnect"]),
    };
  }

  consumer(config: unknown) {
    this.calls.push(["consumer", config]);
    return {
      events: { CRASH: "consumer.crash", DISCONNECT: "consumer.disconnect" },
      on: () => undefined,
      connect: async () => void this.calls.push(["consumer.connect"]),
      subscribe: async (o: unknown) => void this.calls.push(["consumer.subscribe", o]),
      run: async (o: { eachBatch: (args: unknown) => Promise<void> } & Record<string, unknown>) => {
        const { eachBatch, ...rest } = o;
        this.calls.push(["consumer.run", rest]);
        this.eachBatch = eachBatch;
      },
      commitOffsets: async (offsets: unknown) => void this.calls.push(["consumer.commitOffsets", offsets]),
      disconnect: async () => void this.calls.push(["consumer.disconnect"]),
    };
  }

  /** Feeds one fetched batch to the adapter's eachBatch, as kafkajs would. */
  deliver(topic: string, partition: number, messages: FakeBatchMessage[]): Promise<void> {
    return this.eachBatch!({
      batch: { topic, partition, messages },
      resolveOffset: (o: string) => void this.calls.push(["resolveOffset", o]),
      heartbeat: async () => void this.calls.push(["heartbeat"]),
      isRunning: () => true,
      isStale: () => false,
    });
  }

  named(name: string): unknown[][] {
    return this.calls.filter((c) => c[0] === name).map((c) => c.slice(1));
  }
}

function kafkaBus(fake: FakeKafka, extra: Partial<Parameters<typeof kafkaBusOptions>[0]> = {}) {
  const env = loadKafkaEnv({ KAFKA_BROKERS: "k1:9092,k2:9092", KAFKA_TOPIC_PARTITIONS: "12" });
  return new KafkaBus({
    ...kafkaBusOptions({ ...env, ...extra }, log, "passport"),
    createClient: fake.client(),
  });
}

const message = (offset: number, key: string, value: string): FakeBatchMessage => ({
  offset: String(offset),
  key: Buffer.from(key),
  value: Buffer.from(value),
  headers: { traceparent: Buffer.from("00-abc-def-01") },
});

describe("KafkaBus publish (kafkajs client replaced by a recording fake)", () => {
  it("sends to the topic with key = the message key (organization id), acks = all, through an idempotent producer", async () => {
    const fake = new FakeKafka();
    const bus = kafkaBus(fake);
    const batch: BusMessage[] = [
      { key: "org_a", value: '{"id":"evt_1"}' },
      { key: "org_b", value: '{"id":"evt_2"}', headers: { "x-trace": "1" } },
    ];
    await bus.publish(DOMAIN_EVENTS_TOPIC, batch);
    await bus.publish(DOMAIN_EVENTS_TOPIC, [{ key: "org_a", value: '{"id":"evt_3"}' }]);
    await bus.publish(DOMAIN_EVENTS_TOPIC, []);

    expect(fake.named("producer")).toEqual([
      [expect.objectContaining({ idempotent: true, maxInFlightRequests: 1, allowAutoTopicCreation: false })],
    ]);
    expect(fake.named("producer.connect")).toHaveLength(1);
    expect(fake.named("producer.send")).toEqual([
      [
        {
          topic: "dpp.domain-events.v1",
          acks: -1,
          messages: [
            { key: "org_a", value: '{"id":"evt_1"}', headers: undefined },
            { key: "org_b", value: '{"id":"evt_2"}', headers: { "x-trace": "1" } },
          ],
        },
      ],
      [{ topic: "dpp.domain-events.v1", acks: -1, messages: [{ key: "org_a", value: '{"id":"evt_3"}' }] }],
    ]);
    await bus.close();
  });

  it("creates a missing topic once, with the configured partitions, before the first send", async () => {
    const fake = new FakeKafka();
    const bus = kafkaBus(fake, { KAFKA_TOPIC_REPLICATION_FACTOR: 3 });
    await bus.publish("t1", [{ key: "k", value: "v" }]);
    await bus.publish("t1", [{ key: "k", value: "v" }]);
    expect(fake.named("admin.createTopics")).toEqual([
      [{ waitForLeaders: true, topics: [{ topic: "t1", numPartitions: 12, replicationFactor: 3 }] }],
    ]);
    const order = fake.calls.map((c) => c[0]);
    expect(order.indexOf("admin.createTopics")).toBeLessThan(order.indexOf("producer.send"));
    expect(fake.named("admin.disconnect")).toHaveLength(1);
    await bus.close();
  });

  it("does not create a topic that exists", async () => {
    const fake = new FakeKafka();
    fake.existingTopics = ["t2"];
    const bus = kafkaBus(fake);
    await bus.publish("t2", [{ key: "k", value: "v" }]);
    expect(fake.named("admin.listTopics")).toHaveLength(1);
    expect(fake.named("admin.createTopics")).toEqual([]);
    await bus.close();
  });

  it("rejects while the broker fails (so the relay keeps its rows), and tries again on the next publish", async () => {
    const fake = new FakeKafka();
    const bus = kafkaBus(fake);
    fake.failCreateTopics = new Error("no broker");
    await expect(bus.publish("t3", [{ key: "k", value: "v" }])).rejects.toThrow("no broker");
    fake.failCreateTopics = null;
    fake.failSend = new Error("KafkaJSNumberOfRetriesExceeded");
    await expect(bus.publish("t3", [{ key: "k", value: "v" }])).rejects.toThrow("RetriesExceeded");
    fake.failSend = null;
    await bus.publish("t3", [{ key: "k", value: "v" }]);
    expect(fake.named("admin.createTopics")).toHaveLength(2);
    expect(fake.named("producer.send")).toHaveLength(2);
    await bus.close();
  });

  it("reconnects the producer after kafkajs reported a disconnect", async () => {
    const fake = new FakeKafka();
    const bus = kafkaBus(fake);
    await bus.publish("t4", [{ key: "k", value: "1" }]);
    fake.producerHandlers.get("producer.disconnect")!();
    await bus.publish("t4", [{ key: "k", value: "2" }]);
    expect(fake.named("producer")).toHaveLength(2);
    expect(fake.named("producer.connect")).toHaveLength(2);
    await bus.close();
  });
});

describe("KafkaBus subscribe (kafkajs client replaced by a recording fake)", () => {
  it("joins the consumer group from the beginning of the topic, with auto-commit off", async () => {
    const fake = new FakeKafka();
    const bus = kafkaBus(fake);
    await bus.subscribe({ group: "events", topic: DOMAIN_EVENTS_TOPIC, handler: async () => undefined });
    expect(fake.named("consumer")).toEqual([
      [expect.objectContaining({ groupId: "events", allowAutoTopicCreation: false })],
    ]);
    expect(fake.named("consumer.subscribe")).toEqual([
      [{ topics: [DOMAIN_EVENTS_TOPIC], fromBeginning: true }],
    ]);
    expect(fake.named("consumer.run")).toEqual([
      [{ autoCommit: false, eachBatchAutoResolve: false, partitionsConsumedConcurrently: 1 }],
    ]);
    await bus.close();
  });

  it("commits the next offset only after the handler resolved, and passes key, value and headers as text", async () => {
    const fake = new FakeKafka();
    const bus = kafkaBus(fake);
    const got: BusMessage[] = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    await bus.subscribe({
      group: "events",
      topic: "t",
      handler: async (batch) => {
        got.push(...batch);
        await gate;
      },
    });
    const delivered = fake.deliver("t", 3, [message(41, "org_a", "v41"), message(42, "org_a", "v42")]);
    await new Promise((r) => setImmediate(r));
    expect(got.map((m) => m.value)).toEqual(["v41", "v42"]);
    // The handler (the feed transaction) has not finished: nothing is committed yet.
    expect(fake.named("consumer.commitOffsets")).toEqual([]);
    expect(fake.named("resolveOffset")).toEqual([]);
    release();
    await delivered;
    expect(fake.named("consumer.commitOffsets")).toEqual([[[{ topic: "t", partition: 3, offset: "43" }]]]);
    expect(fake.named("resolveOffset")).toEqual([["42"]]);
    expect(got[0]).toEqual({ key: "org_a", value: "v41", headers: { traceparent: "00-abc-def-01" } });
    await bus.close();
  });

  it("commits nothing when the handler throws, so the batch is fetched again", async () => {
    const fake = new FakeKafka();
    const bus = kafkaBus(fake);
    await bus.subscribe({
      group: "events",
      topic: "t",
      handler: async () => {
        throw new Error("feed database down");
      },
    });
    await expect(fake.deliver("t", 0, [message(7, "org_a", "x")])).rejects.toThrow("feed database down");
    expect(fake.named("consumer.commitOffsets")).toEqual([]);
    expect(fake.named("resolveOffset")).toEqual([]);
    await bus.close();
  });

  it("hands a large batch over in chunks, committing after each chunk that succeeded and none after a failure", async () => {
    const fake = new FakeKafka();
    const bus = kafkaBus(fake);
    const sizes: number[] = [];
    await bus.subscribe({
      group: "events",
      topic: "t",
      handler: async (batch) => {
        sizes.push(batch.length);
        if (sizes.length === 3) throw new Error("third chunk fails");
      },
    });
    const messages = Array.from({ length: 250 }, (_, i) => message(1000 + i, "org_a", `v${i}`));
    await expect(fake.deliver("t", 1, messages)).rejects.toThrow("third chunk fails");
    expect(sizes).toEqual([100, 100, 50]);
    expect(fake.named("consumer.commitOffsets")).toEqual([
      [[{ topic: "t", partition: 1, offset: "1100" }]],
      [[{ topic: "t", partition: 1, offset: "1200" }]],
    ]);
    await bus.close();
  });

  it("stop() and close() disconnect the consumer and the producer", async () => {
    const fake = new FakeKafka();
    const bus = kafkaBus(fake);
    const sub = await bus.subscribe({ group: "g", topic: "t", handler: async () => undefined });
    await bus.subscribe({ group: "g2", topic: "t", handler: async () => undefined });
    await bus.publish("t", [{ key: "k", value: "v" }]);
    await sub.stop();
    await sub.stop();
    expect(fake.named("consumer.disconnect")).toHaveLength(1);
    await bus.close();
    expect(fake.named("consumer.disconnect")).toHaveLength(2);
    expect(fake.named("producer.disconnect")).toHaveLength(1);
    await expect(bus.publish("t", [{ key: "k", value: "v" }])).rejects.toThrow("bus closed");
    await bus.close();
    expect(fake.named("producer.disconnect")).toHaveLength(1);
  });
});

describe("Kafka configuration", () => {
  it("createBus chooses Kafka when KAFKA_BROKERS is set and the Postgres transport otherwise", async () => {
    const fake = new FakeKafka();
    const kafka = createBus(
      { DATABASE_URL: "postgres://x@127.0.0.1/db", ...loadKafkaEnv({ KAFKA_BROKERS: "b:9092" }) },
      log,
      { serviceName: "events", createKafkaClient: fake.client() },
    );
    expect(kafka).toBeInstanceOf(KafkaBus);
    expect(fake.config).toMatchObject({ brokers: ["b:9092"], clientId: "events", ssl: false });
    await kafka.close();
    const pg = createBus({ DATABASE_URL: "postgres://x@127.0.0.1/db", ...loadKafkaEnv({}) }, log);
    expect(pg).toBeInstanceOf(PgBus);
    await pg.close();
  });

  it("maps TLS and SASL settings onto the kafkajs client", () => {
    const env = loadKafkaEnv({
      KAFKA_BROKERS: "b-1.msk:9096, b-2.msk:9096",
      KAFKA_CLIENT_ID: "dpp-events",
      KAFKA_SSL: "true",
      KAFKA_SASL_MECHANISM: "scram-sha-512",
      KAFKA_SASL_USERNAME: "dpp",
      KAFKA_SASL_PASSWORD: "s3cret",
    });
    const config = kafkaClientConfig(kafkaBusOptions(env, log));
    expect(config).toMatchObject({
      brokers: ["b-1.msk:9096", "b-2.msk:9096"],
      clientId: "dpp-events",
      ssl: true,
      sasl: { mechanism: "scram-sha-512", username: "dpp", password: "s3cret" },
    });
    // Reconnects and requests back off exponentially, capped.
    expect(config.retry).toEqual({ initialRetryTime: 300, maxRetryTime: 10_000, retries: 8 });
    const plain = kafkaClientConfig(
      kafkaBusOptions(
        loadKafkaEnv({
          KAFKA_BROKERS: "b:9092",
          KAFKA_SASL_MECHANISM: "plain",
          KAFKA_SASL_USERNAME: "u",
          KAFKA_SASL_PASSWORD: "p",
        }),
        log,
      ),
    );
    expect(plain).toMatchObject({ ssl: false, sasl: { mechanism: "plain", username: "u", password: "p" } });
  });

  it("takes KAFKA_SSL_CA as PEM text or as a path to a PEM file", () => {
    const pem = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
    const inline = kafkaBusOptions(loadKafkaEnv({ KAFKA_BROKERS: "b:9093", KAFKA_SSL_CA: pem }), log);
    expect(inline.ssl).toEqual({ ca: [pem] });
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "kafka-ca-")), "ca.pem");
    fs.writeFileSync(file, pem);
    const fromFile = kafkaBusOptions(loadKafkaEnv({ KAFKA_BROKERS: "b:9093", KAFKA_SSL_CA: file }), log);
    expect(fromFile.ssl).toEqual({ ca: [pem] });
    expect(() =>
      kafkaBusOptions(loadKafkaEnv({ KAFKA_BROKERS: "b:9093", KAFKA_SSL_CA: "/no/such/ca.pem" }), log),
    ).toThrow(/KAFKA_SSL_CA/);
  });

  it("refuses malformed Kafka settings, naming each variable", () => {
    const refuse = (env: Record<string, string>) => {
      try {
        loadKafkaEnv(env);
      } catch (err) {
        expect(err).toBeInstanceOf(ConfigError);
        return (err as Error).message;
      }
      throw new Error(`accepted ${JSON.stringify(env)}`);
    };
    expect(refuse({ KAFKA_BROKERS: "kafka" })).toMatch(/KAFKA_BROKERS/);
    expect(refuse({ KAFKA_BROKERS: "b:9092", KAFKA_SSL: "yes" })).toMatch(/KAFKA_SSL/);
    expect(refuse({ KAFKA_BROKERS: "b:9092", KAFKA_TOPIC_PARTITIONS: "0" })).toMatch(
      /KAFKA_TOPIC_PARTITIONS/,
    );
    expect(refuse({ KAFKA_BROKERS: "b:9092", KAFKA_SASL_MECHANISM: "gssapi" })).toMatch(
      /KAFKA_SASL_MECHANISM/,
    );
    const missing = refuse({ KAFKA_BROKERS: "b:9092", KAFKA_SASL_MECHANISM: "plain" });
    expect(missing).toMatch(/KAFKA_SASL_USERNAME/);
    expect(missing).toMatch(/KAFKA_SASL_PASSWORD/);
    // Unset and empty mean "no Kafka".
    expect(loadKafkaEnv({}).KAFKA_BROKERS).toBeUndefined();
    expect(loadKafkaEnv({ KAFKA_BROKERS: "", KAFKA_SASL_MECHANISM: "" }).KAFKA_BROKERS).toBeUndefined();
  });
});
