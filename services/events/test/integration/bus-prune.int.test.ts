/**
 * The Postgres-table bus is pruned by the running service (the kit's `bus-prune` leader job): messages every
 * consumer group has read and that are older than the retention (72 h) go; unread ones and recent ones stay.
 */
import { randomBytes } from "node:crypto";
import { DOMAIN_EVENTS_TOPIC, createLogger } from "@dpp/kit";
import { PgBus } from "@dpp/bus";
import { eventually, startServiceUnderTest, type UnderTest } from "@dpp/kit/testing";
import pg from "pg";
import { eventsService } from "../../src/service";
import { domainEvent, newOrg, type Tenant } from "../harness";

let service: UnderTest<typeof eventsService>;
let bus: PgBus;
let admin: pg.Client;

beforeAll(async () => {
  // A pass every 300 ms (the first one waits as long), so that the test sees the job run.
  service = await startServiceUnderTest(eventsService, { BUS_PRUNE_INTERVAL_MS: "300" }, "events_bus_prune");
  bus = new PgBus({
    url: service.database.url,
    log: createLogger("bus-prune-test", "silent"),
    pollIntervalMs: 50,
  });
  admin = new pg.Client({ connectionString: service.database.url });
  await admin.connect();
});

afterAll(async () => {
  await admin?.end();
  await bus?.close();
  await service?.close();
});

const messageIds = async (topic: string) =>
  (
    await admin.query<{ id: string }>("select id::text from bus.message where topic = $1 order by id", [
      topic,
    ])
  ).rows.map((r) => r.id);

describe("the bus-prune job of a running service", () => {
  it("deletes old messages every group has read, and keeps recent and unread ones", async () => {
    const t: Tenant = { organizationId: newOrg(), livemode: false };
    const events = [domainEvent(t), domainEvent(t), domainEvent(t)];
    await bus.publish(
      DOMAIN_EVENTS_TOPIC,
      events.map((e) => ({ key: e.organization_id, value: JSON.stringify(e) })),
    );
    // Consumed by the service: its group's position is past them.
    await eventually(async () => {
      const { rows } = await admin.query<{ n: number }>(
        "select count(*)::int as n from events.event where organization_id = $1",
        [t.organizationId],
      );
      return rows[0]!.n === 3 ? true : undefined;
    });
    const read = await messageIds(DOMAIN_EVENTS_TOPIC);
    expect(read.length).toBeGreaterThanOrEqual(3);
    // A topic no group reads: its messages are never pruned, however old.
    const unreadTopic = `unread.${randomBytes(4).toString("hex")}`;
    await bus.publish(unreadTopic, [{ key: "k", value: "v" }]);
    // The first two of the read messages are older than the retention; the third is recent.
    const [first, second, third] = read.slice(-3);
    await admin.query(
      "update bus.message set created_at = now() - interval '73 hours' where id = any($1::bigint[]) or topic = $2",
      [[first, second], unreadTopic],
    );

    await eventually(async () =>
      (await messageIds(DOMAIN_EVENTS_TOPIC)).includes(first!) ? undefined : true,
    );
    const left = await messageIds(DOMAIN_EVENTS_TOPIC);
    expect(left).not.toContain(second);
    expect(left).toContain(third);
    expect(await messageIds(unreadTopic)).toHaveLength(1);
  });
});
