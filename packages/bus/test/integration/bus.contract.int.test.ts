/**
 * Runs the bus contract (../contract/bus.contract.ts) against every adapter:
 *
 * - the Postgres-table transport (real Postgres), on its own pool and in the subscriber's database (its
 *   batches in transactions of the subscriber's pool);
 * - the Kafka adapter against librdkafka's mock cluster, a Kafka-protocol
 *   broker (tools/kafka-mock) this file starts and stops. The mock cannot serve
 *   kafkajs' idempotent producer nor topic creation, so the adapter runs on it
 *   with its test-only settings (KAFKA_MOCK_SETTINGS): a plain producer (still
 *   acks = all, one request in flight) and topics created by the broker on
 *   first use. What the mock cannot serve at all is skipped by name below;
 * - the Kafka adapter with the production settings when KAFKA_BROKERS points
 *   at a real broker.
 */
import { createLogger } from "@dpp/kit";
import { createDb } from "@dpp/kit/internal";
import { createTestDatabase, type TestDatabase } from "@dpp/kit/testing";
import { PgBus, migrateBus, type SubscribeOptions } from "../../src/bus";
import { createBus } from "../../src/bus-factory";
import { loadKafkaEnv } from "../../src/kafka-config";
import { describeBusContract } from "../contract/bus.contract";
import { KAFKA_MOCK_SETTINGS, startKafkaMock, type KafkaMock } from "../support/kafka-mock";

const log = createLogger("kit-bus-contract", "silent");
let tdb: TestDatabase;
let mock: KafkaMock | undefined;

/** Contract tests librdkafka's mock cluster cannot serve, with the reason (empty: it serves them all). */
const NOT_SERVED_BY_MOCK: Record<string, string> = {};

beforeAll(async () => {
  tdb = await createTestDatabase("buscontract");
  await migrateBus(tdb.url);
  mock = await startKafkaMock();
  const skipped = Object.entries(NOT_SERVED_BY_MOCK);
  console.log(
    `Kafka contract on librdkafka's mock cluster at ${mock.brokers}; test-only settings ${JSON.stringify(KAFKA_MOCK_SETTINGS)}; ` +
      (skipped.length
        ? `skipped (not served by the mock): ${skipped.map(([t, why]) => `"${t}" (${why})`).join("; ")}`
        : "skipped: none"),
  );
}, 60_000);

afterAll(async () => {
  try {
    await mock?.stop();
  } finally {
    await tdb?.drop();
  }
});

describeBusContract("PgBus (Postgres-table transport)", {
  bus: () => new PgBus({ url: tdb.url, log, pollIntervalMs: 30 }),
  deliveryTimeoutMs: 10_000,
  quietMs: 150,
});

// The same transport in the subscriber's own database: every subscription names the pool the bus is local to,
// so each batch is read in a transaction of that pool, which the handler is given.
describeBusContract("PgBus in the subscriber's database (batches in its transactions)", {
  bus: () => {
    const db = createDb<unknown>({
      url: tdb.url,
      schema: "public",
      applicationName: "kit-bus-contract",
      max: 3,
    });
    const bus = new PgBus({ url: tdb.url, log, pollIntervalMs: 30, local: db });
    return Object.assign(bus, {
      subscribe: (o: SubscribeOptions) => PgBus.prototype.subscribe.call(bus, { ...o, db }),
      close: async () => {
        await PgBus.prototype.close.call(bus);
        await db.destroy();
      },
    });
  },
  deliveryTimeoutMs: 10_000,
  quietMs: 150,
});

describeBusContract("KafkaBus on librdkafka's mock cluster (test-only settings)", {
  bus: () =>
    createBus({ DATABASE_URL: "postgres://unused", ...loadKafkaEnv({ KAFKA_BROKERS: mock!.brokers }) }, log, {
      serviceName: "kit-contract",
      kafkaTestOnly: KAFKA_MOCK_SETTINGS,
    }),
  // A consumer-group join on the mock takes about 3 s; a rebalance with two members longer.
  deliveryTimeoutMs: 30_000,
  quietMs: 1_500,
  testTimeoutMs: 90_000,
  skip: NOT_SERVED_BY_MOCK,
});

if (process.env.KAFKA_BROKERS) {
  describeBusContract(`KafkaBus (${process.env.KAFKA_BROKERS}, production settings)`, {
    bus: () =>
      createBus({ DATABASE_URL: "postgres://unused", ...loadKafkaEnv(process.env) }, log, {
        serviceName: "kit-contract",
      }),
    // A consumer-group join takes several seconds.
    deliveryTimeoutMs: 60_000,
    quietMs: 2_000,
    testTimeoutMs: 180_000,
  });
}
