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
import pino from "pino";
import { ConfigError, DOMAIN_EVENTS_TOPIC, createLogger, type Logger } from "@dpp/kit";
import { eventually } from "@dpp/kit/testing";
import { PgBus } from "../src/bus";
import { createBus } from "../src/bus-factory";
import {
  KAFKA_REQUEST_RETRY,
  KafkaBus,
  KafkaTopicMissingError,
  kafkaBusOptions,
  kafkaClientConfig,
  rateLimitedLogCreator,
  type KafkaBusOptions,
} from "../src/kafka-bus";
import { loadKafkaEnv } from "../src/kafka-config";
import type { BusMessage } from "../src/bus";
import { FakeKafka, type FakeBatchMessage } from "./support/fake-kafka";

const log = createLogger("kafka-bus-test", "silent");

function kafkaBus(
  fake: FakeKafka,
  extra: Partial<Parameters<typeof kafkaBusOptions>[0]> = {},
  options: Partial<KafkaBusOptions> = {},
) {
  const env = loadKafkaEnv({ KAFKA_BROKERS: "k1:9092,k2:9092", KAFKA_TOPIC_PARTITIONS: "12" });
  return new KafkaBus({
    ...kafkaBusOptions({ ...env, ...extra }, options.log ?? log, "passport"),
    createClient: fake.client(),
    ...options,
  });
}

/** Subscribes and waits until the subscription runs (it joins in the background). */
async function subscribed(bus: KafkaBus, o: Parameters<KafkaBus["subscribe"]>[0]) {
  const sub = await bus.subscribe(o);
  await eventually(async () => (sub.status().state === "running" ? true : undefined), 5_000, 5);
  return sub;
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
    await subscribed(bus, { group: "events", topic: DOMAIN_EVENTS_TOPIC, handler: async () => undefined });
    expect(fake.named("consumer")).toEqual([
      [
        expect.objectContaining({
          groupId: "events",
          allowAutoTopicCreation: false,
          // KAFKA_SESSION_TIMEOUT_MS and KAFKA_REBALANCE_TIMEOUT_MS defaults; heartbeats at a third of the session.
          sessionTimeout: 10_000,
          rebalanceTimeout: 30_000,
          heartbeatInterval: 3_000,
        }),
      ],
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
    await subscribed(bus, {
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

  it("reports the group's lag behind each partition's high watermark, as of its last batch", async () => {
    const fake = new FakeKafka();
    const bus = kafkaBus(fake);
    await subscribed(bus, { group: "events", topic: "t", handler: async () => undefined });
    expect(await bus.lag("events", "t")).toBeUndefined();
    await fake.deliver("t", 3, [message(41, "org_a", "v41"), message(42, "org_a", "v42")], "50");
    await fake.deliver("t", 4, [message(7, "org_b", "v7")], "8");
    // Partition 3: offsets 43 to 49 left; partition 4: none.
    expect(await bus.lag("events", "t")).toBe(7);
    expect(await bus.lag("other", "t")).toBeUndefined();
    await bus.close();
  });

  it("commits nothing when the handler throws, so the batch is fetched again", async () => {
    const fake = new FakeKafka();
    const bus = kafkaBus(fake);
    await subscribed(bus, {
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
    await subscribed(bus, {
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
    const sub = await subscribed(bus, { group: "g", topic: "t", handler: async () => undefined });
    await subscribed(bus, { group: "g2", topic: "t", handler: async () => undefined });
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

/** A logger that keeps its lines (parsed) instead of writing them. */
function capturingLogger(): { log: Logger; lines: Array<Record<string, any>> } {
  const lines: Array<Record<string, any>> = [];
  const log = pino({ level: "debug" }, { write: (line: string) => void lines.push(JSON.parse(line)) });
  return { log, lines };
}

const unknownTopic = () =>
  Object.assign(new Error("This server does not host this topic-partition"), {
    type: "UNKNOWN_TOPIC_OR_PARTITION",
    retriable: true,
  });

describe("KafkaBus topics (kafkajs client replaced by a recording fake)", () => {
  it("creates a topic with the broker's default.replication.factor when KAFKA_TOPIC_REPLICATION_FACTOR is unset, never -1", async () => {
    const fake = new FakeKafka();
    fake.brokerDefaultReplicationFactor = "2";
    const bus = kafkaBus(fake);
    await bus.publish("t-rf", [{ key: "k", value: "v" }]);
    expect(fake.named("admin.createTopics")).toEqual([
      [{ waitForLeaders: true, topics: [{ topic: "t-rf", numPartitions: 12, replicationFactor: 2 }] }],
    ]);
    await bus.close();

    // The broker does not say (DescribeConfigs refused): min(3, brokers).
    const refused = new FakeKafka();
    refused.brokerDefaultReplicationFactor = null;
    refused.brokers = 2;
    const other = kafkaBus(refused);
    await other.publish("t-rf2", [{ key: "k", value: "v" }]);
    expect(refused.named("admin.createTopics")[0]![0]).toMatchObject({
      topics: [{ topic: "t-rf2", replicationFactor: 2 }],
    });
    await other.close();
  });

  it("with KAFKA_TOPIC_CREATE=false never creates the topic, names it while it is missing, and publishes once it exists", async () => {
    const fake = new FakeKafka();
    const bus = kafkaBus(fake, { KAFKA_TOPIC_CREATE: false });
    const err = await bus.publish("t-nocreate", [{ key: "k", value: "v" }]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(KafkaTopicMissingError);
    expect((err as Error).message).toMatch(
      /kafka topic "t-nocreate" does not exist: KAFKA_TOPIC_CREATE=false/,
    );
    expect(bus.status().publish).toEqual({ failing: true, lastError: expect.stringContaining("t-nocreate") });
    fake.existingTopics.push("t-nocreate"); // an operator created it
    await bus.publish("t-nocreate", [{ key: "k", value: "v" }]);
    expect(fake.named("admin.createTopics")).toEqual([]);
    expect(fake.named("producer.send")).toHaveLength(1);
    expect(bus.status().publish).toEqual({ failing: false });
    await bus.close();
  });

  it("says clearly when the broker refuses to create the topic", async () => {
    const fake = new FakeKafka();
    fake.failCreateTopics = Object.assign(new Error("Not authorized to access topics"), {
      type: "TOPIC_AUTHORIZATION_FAILED",
    });
    const bus = kafkaBus(fake);
    await expect(bus.publish("t-denied", [{ key: "k", value: "v" }])).rejects.toThrow(
      /kafka topic "t-denied" does not exist: the broker refused to create it \(TOPIC_AUTHORIZATION_FAILED\)/,
    );
    await bus.close();
  });

  it("after a failed send, replaces the producer (its sequence numbers are in doubt) and checks the topic again", async () => {
    const fake = new FakeKafka();
    const bus = kafkaBus(fake);
    await bus.publish("t-fail", [{ key: "k", value: "1" }]);
    fake.failSend = unknownTopic();
    await expect(bus.publish("t-fail", [{ key: "k", value: "2" }])).rejects.toThrow("does not host");
    fake.failSend = null;
    await bus.publish("t-fail", [{ key: "k", value: "2" }]);
    expect(fake.named("producer")).toHaveLength(2);
    expect(fake.named("producer.disconnect")).toHaveLength(1);
    expect(fake.named("admin.listTopics")).toHaveLength(2);
    await bus.close();
  });
});

describe("KafkaBus recovery (kafkajs client replaced by a recording fake)", () => {
  it("returns from subscribe before the group is joined, and joins by itself once the broker answers", async () => {
    const fake = new FakeKafka();
    fake.failAdminConnect = new Error("connect ECONNREFUSED 127.0.0.1:9092");
    const bus = kafkaBus(fake, {}, { backoffMinMs: 10, backoffMaxMs: 50 });
    const sub = await bus.subscribe({ group: "events", topic: "t-late", handler: async () => undefined });
    expect(["starting", "retrying"]).toContain(sub.status().state);
    await eventually(async () => (sub.status().state === "retrying" ? true : undefined), 2_000, 5);
    expect(sub.status().lastError).toMatch(/ECONNREFUSED/);
    expect(bus.status().healthy).toBe(false);
    fake.failAdminConnect = null; // the broker is back
    await eventually(async () => (sub.status().state === "running" ? true : undefined), 2_000, 5);
    expect(bus.status()).toMatchObject({ transport: "kafka", healthy: true });
    await bus.close();
  });

  it("restarts a crashed consumer with backoff that grows, logging the first failure at once and repeats rate-limited", async () => {
    const fake = new FakeKafka();
    const { log: captured, lines } = capturingLogger();
    const bus = kafkaBus(
      fake,
      {},
      { log: captured, backoffMinMs: 20, backoffMaxMs: 5_000, repeatLogMs: 60_000 },
    );
    await subscribed(bus, { group: "events", topic: "t-crash", handler: async () => undefined });
    const connects: number[] = [];
    const failing = new Error("The group coordinator is not available");
    fake.failConsumerConnect = failing;
    const origCalls = fake.calls;
    const push = origCalls.push.bind(origCalls);
    origCalls.push = (...items) => {
      for (const c of items) if (c[0] === "consumer.connect") connects.push(Date.now());
      return push(...items);
    };
    fake.crashConsumer(failing);
    await eventually(async () => (connects.length >= 7 ? true : undefined), 10_000, 5);
    // Delays double from 20 ms, each between half and all of its step, so two steps later is always longer
    // (the first gap also holds the logging of the first failure, and is left out).
    const gaps = connects.slice(2).map((t, i) => t - connects[i + 1]!);
    for (let i = 0; i + 2 < gaps.length; i++) expect(gaps[i + 2]!).toBeGreaterThan(gaps[i]!);
    const failures = lines.filter((l) => l.msg === "job pass failed; retrying with backoff");
    expect(failures).toHaveLength(1); // at once, then nothing for repeatLogMs
    expect(failures[0]).toMatchObject({ level: 50, job: "kafka-consumer:events:t-crash" });
    expect(lines.filter((l) => l.msg === "bus subscription lost; retrying with backoff")).toHaveLength(1);
    fake.failConsumerConnect = null;
    await eventually(
      async () => (lines.some((l) => l.msg === "job recovered") ? true : undefined),
      10_000,
      5,
    );
    expect(bus.status().subscriptions).toEqual([
      expect.objectContaining({ group: "events", topic: "t-crash", state: "running" }),
    ]);
    await bus.close();
  });

  it("creates a deleted topic again and restarts the consumer, found by the periodic check of a running subscription", async () => {
    const fake = new FakeKafka();
    const bus = kafkaBus(fake, {}, { topicCheckIntervalMs: 20, backoffMinMs: 10 });
    await subscribed(bus, { group: "events", topic: "t-gone", handler: async () => undefined });
    expect(fake.named("admin.createTopics")).toHaveLength(1);
    fake.existingTopics = []; // deleted under a running consumer that has not noticed yet
    await eventually(
      async () => (fake.named("admin.createTopics").length === 2 ? true : undefined),
      2_000,
      5,
    );
    await eventually(async () => (fake.named("consumer").length === 2 ? true : undefined), 2_000, 5);
    expect(fake.existingTopics).toEqual(["t-gone"]);
    await bus.close();
  });
});

describe("kafkajs log lines", () => {
  it("go through the service logger at once, then at most once per window with a count; the idempotence warning is dropped", () => {
    const { log: captured, lines } = capturingLogger();
    let now = 1_000;
    const logger = rateLimitedLogCreator(captured, 30_000, () => now)();
    const entry = (message: string) => ({
      namespace: "Connection",
      level: 1,
      label: "ERROR",
      log: { message, broker: "k1:9092", timestamp: "t" },
    });
    for (let i = 0; i < 5; i++) logger(entry("Connection error: connect ECONNREFUSED"));
    logger({
      ...entry("Limiting retries for the idempotent producer may invalidate EoS guarantees"),
      level: 2,
    });
    now += 30_000;
    logger(entry("Connection error: connect ECONNREFUSED"));
    expect(lines.map((l) => [l.level, l.msg, l.repeated])).toEqual([
      [50, "Connection error: connect ECONNREFUSED", undefined],
      [50, "Connection error: connect ECONNREFUSED", 4],
    ]);
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
    // kafkajs retries a request briefly (about 2 s); the relay's and the subscription's backoff follow.
    expect(config.retry).toEqual(KAFKA_REQUEST_RETRY);
    expect(KAFKA_REQUEST_RETRY).toEqual({ initialRetryTime: 250, maxRetryTime: 2_000, retries: 3 });
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

  it("reads the topic, consumer group and group timeouts, with the one-deployment defaults", () => {
    const defaults = loadKafkaEnv({ KAFKA_BROKERS: "b:9092" });
    expect(defaults).toMatchObject({
      KAFKA_TOPIC: "dpp.domain-events.v1",
      KAFKA_CONSUMER_GROUP: "events",
      KAFKA_TOPIC_CREATE: true,
      KAFKA_SESSION_TIMEOUT_MS: 10_000,
      KAFKA_REBALANCE_TIMEOUT_MS: 30_000,
    });
    expect(defaults.KAFKA_TOPIC_REPLICATION_FACTOR).toBeUndefined();
    const staging = loadKafkaEnv({
      KAFKA_BROKERS: "b:9092",
      KAFKA_TOPIC: "staging.dpp.domain-events.v1",
      KAFKA_CONSUMER_GROUP: "staging-events",
      KAFKA_TOPIC_CREATE: "false",
      KAFKA_SESSION_TIMEOUT_MS: "15000",
      KAFKA_REBALANCE_TIMEOUT_MS: "45000",
    });
    expect(kafkaBusOptions(staging, log)).toMatchObject({
      createTopics: false,
      sessionTimeoutMs: 15_000,
      rebalanceTimeoutMs: 45_000,
    });
    expect(staging).toMatchObject({
      KAFKA_TOPIC: "staging.dpp.domain-events.v1",
      KAFKA_CONSUMER_GROUP: "staging-events",
    });
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
    expect(refuse({ KAFKA_BROKERS: "b:9092", KAFKA_TOPIC: "two words" })).toMatch(/KAFKA_TOPIC/);
    expect(refuse({ KAFKA_BROKERS: "b:9092", KAFKA_CONSUMER_GROUP: "" })).toMatch(/KAFKA_CONSUMER_GROUP/);
    expect(refuse({ KAFKA_BROKERS: "b:9092", KAFKA_SESSION_TIMEOUT_MS: "1000" })).toMatch(
      /KAFKA_SESSION_TIMEOUT_MS/,
    );
    expect(
      refuse({
        KAFKA_BROKERS: "b:9092",
        KAFKA_SESSION_TIMEOUT_MS: "20000",
        KAFKA_REBALANCE_TIMEOUT_MS: "10000",
      }),
    ).toMatch(/KAFKA_REBALANCE_TIMEOUT_MS: must be at least KAFKA_SESSION_TIMEOUT_MS/);
    // Unset and empty mean "no Kafka".
    expect(loadKafkaEnv({}).KAFKA_BROKERS).toBeUndefined();
    expect(loadKafkaEnv({ KAFKA_BROKERS: "", KAFKA_SASL_MECHANISM: "" }).KAFKA_BROKERS).toBeUndefined();
  });
});
