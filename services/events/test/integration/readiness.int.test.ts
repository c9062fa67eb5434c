/**
 * The events service is ready as soon as Postgres answers, whatever the bus
 * does: configured for Kafka with no broker listening (a stopped broker:
 * connections refused), it starts at once, serves the feed, and reports the
 * bus as NOT_SERVING on its own gRPC health entry ("dpp.bus") while the
 * server ("") is SERVING; it does not exit.
 */
import net from "node:net";
import { BUS_HEALTH_SERVICE, createHealthClient } from "@dpp/kit/internal";
import { startServiceUnderTest, type UnderTest } from "@dpp/kit/testing";
import { eventsV1, healthV1 } from "@dpp/proto";
import { eventsService } from "../../src/service";

/** A 127.0.0.1 port nothing listens on: a stopped broker. */
function stoppedBroker(): Promise<string> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.on("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(`127.0.0.1:${port}`));
    });
  });
}

let service: UnderTest<typeof eventsService>;
let started: number;

beforeAll(async () => {
  const t0 = Date.now();
  service = await startServiceUnderTest(eventsService, { KAFKA_BROKERS: await stoppedBroker() }, "ready");
  started = Date.now() - t0;
});

afterAll(() => service?.close());

it("starts without the broker, serves the feed, and reports the bus on its own health entry", async () => {
  // Well within the stack's readiness limit: it never waits for a consumer group.
  expect(started).toBeLessThan(15_000);
  const { SERVING, NOT_SERVING } = healthV1.HealthCheckResponse_ServingStatus;
  const health = createHealthClient(service.address, { deadlineMs: 2_000 });
  try {
    expect(await health.check("")).toBe(SERVING);
    expect(await health.check("dpp.events.v1.EventsService")).toBe(SERVING);
    expect(await health.check(BUS_HEALTH_SERVICE)).toBe(NOT_SERVING);
    const page = await service
      .client(eventsV1.EventsService)
      .listEvents(
        { limit: 10 },
        { context: { requestId: "req_ready", organizationId: "org_ready", livemode: false } },
      );
    expect(page.events).toEqual([]);
    // The consumer keeps retrying in the background (kafkajs gives up one attempt within seconds); the
    // service stays up and serving.
    await new Promise((r) => setTimeout(r, 4_000));
    expect(await health.check("")).toBe(SERVING);
    expect(await health.check(BUS_HEALTH_SERVICE)).toBe(NOT_SERVING);
  } finally {
    health.close();
  }
});
