/**
 * Runs the bus contract (../contract/bus.contract.ts) against every adapter that
 * can run here: the Postgres-table transport always (real Postgres), and the
 * Kafka adapter when KAFKA_BROKERS points at a broker. No Kafka broker can be
 * installed on the development and CI machines, so the Kafka run is skipped
 * there; the Kafka adapter's boundary tests (kafka-bus.test.ts) replace its
 * kafkajs client instead.
 */
import { PgBus, migrateBus } from "../../src/bus";
import { createBus } from "../../src/bus-factory";
import { loadKafkaEnv } from "../../src/kafka-config";
import { createLogger } from "../../src/logger";
import { createTestDatabase, type TestDatabase } from "../../src/testing";
import { describeBusContract } from "../contract/bus.contract";

const log = createLogger("kit-bus-contract", "silent");
let tdb: TestDatabase;

beforeAll(async () => {
  tdb = await createTestDatabase("buscontract");
  await migrateBus(tdb.url);
});

afterAll(async () => {
  await tdb?.drop();
});

describeBusContract("PgBus (Postgres-table transport)", {
  bus: () => new PgBus({ url: tdb.url, log, pollIntervalMs: 30 }),
  deliveryTimeoutMs: 10_000,
  quietMs: 150,
});

if (process.env.KAFKA_BROKERS) {
  describeBusContract(`KafkaBus (${process.env.KAFKA_BROKERS})`, {
    bus: () =>
      createBus({ DATABASE_URL: "postgres://unused", ...loadKafkaEnv(process.env) }, log, {
        serviceName: "kit-contract",
      }),
    // A consumer-group join takes several seconds.
    deliveryTimeoutMs: 60_000,
    quietMs: 2_000,
  });
} else {
  describe("Bus contract: KafkaBus", () => {
    it.skip("skipped: KAFKA_BROKERS is not set (no Kafka broker can be installed on these machines; see kafka-bus.test.ts)", () => {});
  });
}
