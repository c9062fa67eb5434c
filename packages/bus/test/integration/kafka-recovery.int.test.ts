/**
 * Recovery without restarts: the outbox relay and a consumer-group
 * subscription on the Kafka adapter come back by themselves after the topic
 * disappears and the broker stops, once the broker returns. Real Postgres
 * (outbox), the real relay, and in each test one side of the broker:
 *
 * 1. librdkafka's mock cluster (a Kafka-protocol broker, real kafkajs). It
 *    cannot delete or create topics, so "the topic is deleted" is simulated
 *    with its fault injection: metadata answers UNKNOWN_TOPIC_OR_PARTITION for
 *    the topic, and the broker is stopped (connections refused); "the broker
 *    returns" clears both. The adapter runs with its test-only settings.
 * 2. The kafkajs client replaced at its boundary (test/support/fake-kafka.ts):
 *    there the topic is really gone (sends to it fail as a broker answers
 *    them) until the adapter creates it again, which is what this test checks.
 */
import { randomBytes } from "node:crypto";
import type { Kysely } from "kysely";
import { newId, type DomainEvent } from "@dpp/contract";
import { createLogger, createOutboxTable, writeOutbox, type WithOutbox } from "@dpp/kit";
import { OutboxRelay, createDb, migrateSchema } from "@dpp/kit/internal";
import { createTestDatabase, eventually, type TestDatabase } from "@dpp/kit/testing";
import type { Bus, BusMessage, Subscription } from "../../src/bus";
import { KafkaBus, kafkaBusOptions } from "../../src/kafka-bus";
import { loadKafkaEnv } from "../../src/kafka-config";
import { FakeKafka } from "../support/fake-kafka";
import { KAFKA_MOCK_SETTINGS, startKafkaMock, type KafkaMock } from "../support/kafka-mock";

const log = createLogger("kit-kafka-recovery", "silent");
let tdb: TestDatabase;
const cleanup: Array<() => Promise<unknown>> = [];

beforeAll(async () => {
  tdb = await createTestDatabase("kafkarecovery");
});

afterAll(async () => {
  for (const c of cleanup.reverse()) await c().catch(() => undefined);
  await tdb?.drop();
});

async function outbox(label: string): Promise<{ db: Kysely<WithOutbox>; schema: string }> {
  const schema = `kr_${label}_${randomBytes(3).toString("hex")}`;
  const db = createDb<WithOutbox>({ url: tdb.url, schema, applicationName: "kit-kafka-recovery", max: 3 });
  cleanup.push(() => db.destroy());
  await migrateSchema(db, schema, { "0001_outbox": { up: (d) => createOutboxTable(d) } });
  return { db, schema };
}

function event(org: string): DomainEvent {
  return {
    id: newId("evt"),
    type: "passport.created",
    organization_id: org,
    livemode: false,
    created_at: new Date().toISOString(),
    related: { object: "passport", id: newId("pp") },
  };
}

async function write(db: Kysely<WithOutbox>, relay: OutboxRelay, n: number, org: string): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const e = event(org);
    await db.transaction().execute((trx) => writeOutbox(trx, e));
    ids.push(e.id);
    relay.wake();
  }
  return ids;
}

async function unsent(db: Kysely<WithOutbox>): Promise<number> {
  const row = await db
    .selectFrom("outbox")
    .select((eb) => eb.fn.countAll<string>().as("n"))
    .where("sent_at", "is", null)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** A subscription that keeps the event ids it received (first arrival; at-least-once may repeat some). */
async function collect(
  bus: Bus,
  topic: string,
  group: string,
): Promise<{ ids: string[]; sub: Subscription }> {
  const ids: string[] = [];
  const sub = await bus.subscribe({
    group,
    topic,
    handler: async (batch: BusMessage[]) => {
      for (const m of batch) {
        const id = (JSON.parse(m.value) as DomainEvent).id;
        if (!ids.includes(id)) ids.push(id);
      }
    },
  });
  cleanup.push(() => sub.stop());
  return { ids, sub };
}

const backoff = { backoffMinMs: 200, backoffMaxMs: 2_000, topicCheckIntervalMs: 1_000 };

it("on librdkafka's mock cluster: the topic unknown and the broker stopped, then back: the relay catches up and the consumer resumes", async () => {
  const mock: KafkaMock = await startKafkaMock();
  cleanup.push(() => mock.stop());
  const topic = `recovery-${randomBytes(3).toString("hex")}`;
  const bus = new KafkaBus({
    ...kafkaBusOptions(loadKafkaEnv({ KAFKA_BROKERS: mock.brokers }), log, "kit-recovery"),
    testOnly: KAFKA_MOCK_SETTINGS,
    ...backoff,
  });
  cleanup.push(() => bus.close());
  const { db, schema } = await outbox("mock");
  const relay = new OutboxRelay(db, bus, log, {
    schema,
    topic,
    intervalMs: 100,
    backoffMinMs: 200,
    backoffMaxMs: 2_000,
  });
  relay.start();
  cleanup.push(() => relay.stop());
  const got = await collect(bus, topic, "g-recovery");

  const before = await write(db, relay, 5, "org_a");
  await eventually(async () => (got.ids.length >= 5 ? true : undefined), 30_000, 50);

  // The topic disappears (metadata: UNKNOWN_TOPIC_OR_PARTITION) and the broker stops.
  await mock.control(`topic-error ${topic} 3`);
  await mock.control("broker-down 1");
  const during = await write(db, relay, 10, "org_a");
  await eventually(async () => (relay.consecutiveFailures >= 2 ? true : undefined), 30_000, 50);
  expect(await unsent(db)).toBeGreaterThan(0); // the outbox keeps them
  await eventually(async () => (got.sub.status().state === "retrying" ? true : undefined), 30_000, 50);
  expect(bus.status().healthy).toBe(false);

  // The broker returns with the topic: nothing is restarted by hand.
  await mock.control(`topic-error ${topic} 0`);
  await mock.control("broker-up 1");
  const after = await write(db, relay, 5, "org_a");
  await eventually(async () => (got.ids.length >= 20 ? true : undefined), 60_000, 100);
  expect(got.ids).toEqual([...before, ...during, ...after]);
  await eventually(async () => ((await unsent(db)) === 0 ? true : undefined), 10_000, 50);
  expect(relay.consecutiveFailures).toBe(0);
  await eventually(async () => (bus.status().healthy ? true : undefined), 10_000, 50);
}, 150_000);

it("with the kafkajs client replaced: a deleted topic is created again by the adapter, the relay catches up and the consumer is restarted", async () => {
  const fake = new FakeKafka();
  const topic = "dpp.domain-events.v1";
  const bus = new KafkaBus({
    ...kafkaBusOptions(loadKafkaEnv({ KAFKA_BROKERS: "k1:9092" }), log, "kit-recovery"),
    createClient: fake.client(),
    ...backoff,
    backoffMinMs: 20,
    backoffMaxMs: 200,
    topicCheckIntervalMs: 50,
  });
  cleanup.push(() => bus.close());
  const { db, schema } = await outbox("fake");
  const relay = new OutboxRelay(db, bus, log, {
    schema,
    topic,
    intervalMs: 50,
    backoffMinMs: 20,
    backoffMaxMs: 200,
  });
  relay.start();
  cleanup.push(() => relay.stop());
  const sub = await bus.subscribe({ group: "events", topic, handler: async () => undefined });
  cleanup.push(() => sub.stop());
  await eventually(async () => (sub.status().state === "running" ? true : undefined), 5_000, 10);
  const sent = () =>
    fake
      .named("producer.send")
      .flatMap(([r]) => (r as { messages: Array<{ value: string }> }).messages)
      .map((m) => (JSON.parse(m.value) as DomainEvent).id);

  const before = await write(db, relay, 3, "org_b");
  await eventually(async () => (sent().length >= 3 ? true : undefined), 5_000, 10);

  // The topic is deleted and the broker stops: the consumer crashes, publishing fails.
  fake.existingTopics = [];
  fake.failAdminConnect = new Error("connect ECONNREFUSED k1:9092");
  fake.failConsumerConnect = fake.failAdminConnect;
  fake.crashConsumer(
    Object.assign(new Error("This server does not host this topic-partition"), { retriable: true }),
  );
  const during = await write(db, relay, 6, "org_b");
  await eventually(async () => (relay.consecutiveFailures >= 2 ? true : undefined), 5_000, 10);
  expect(await unsent(db)).toBe(6);
  expect(sub.status().state).toBe("retrying");

  // The broker returns, without the topic: the adapter creates it again, the relay and the consumer recover.
  fake.failAdminConnect = null;
  fake.failConsumerConnect = null;
  await eventually(async () => ((await unsent(db)) === 0 ? true : undefined), 10_000, 20);
  expect(fake.existingTopics).toEqual([topic]);
  expect(fake.named("admin.createTopics").length).toBeGreaterThanOrEqual(2);
  const ids = sent();
  expect(ids.slice(0, 3)).toEqual(before);
  expect([...new Set(ids)]).toEqual([...before, ...during]);
  await eventually(async () => (sub.status().state === "running" ? true : undefined), 5_000, 10);
  expect(bus.status().healthy).toBe(true);
}, 60_000);
