/**
 * What the Postgres-table transport (PgBus) promises beyond the bus contract
 * (../contract/bus.contract.ts, run for it in bus.contract.int.test.ts): its
 * migrations, a total order by id, batch-level redelivery and pruning.
 */
import { randomBytes } from "node:crypto";
import pg from "pg";
import { createLogger } from "@dpp/kit";
import { createTestDatabase, eventually, type TestDatabase } from "@dpp/kit/testing";
import { PgBus, migrateBus, type BusMessage, type Subscription } from "../../src/bus";

const log = createLogger("kit-bus-test", "silent");
let tdb: TestDatabase;
let admin: pg.Client;
const buses: PgBus[] = [];
const subs: Subscription[] = [];

const uniq = (label: string) => `${label}-${randomBytes(4).toString("hex")}`;
const msgs = (prefix: string, from: number, to: number): BusMessage[] =>
  Array.from({ length: to - from + 1 }, (_, i) => ({ key: "org_1", value: `${prefix}-${from + i}` }));

function bus(extra: { pollIntervalMs?: number; batchSize?: number; retentionHours?: number } = {}): PgBus {
  const b = new PgBus({ url: tdb.url, log, pollIntervalMs: 50, ...extra });
  buses.push(b);
  return b;
}

/** Subscribes and collects every delivered message, in delivery order. */
async function collect(
  b: PgBus,
  topic: string,
  group: string,
): Promise<{ got: BusMessage[]; sub: Subscription }> {
  const got: BusMessage[] = [];
  const sub = await b.subscribe({ group, topic, handler: async (batch) => void got.push(...batch) });
  subs.push(sub);
  return { got, sub };
}

const waitFor = (got: unknown[], n: number, timeoutMs = 10_000) =>
  eventually(async () => (got.length >= n ? true : undefined), timeoutMs);

async function position(group: string, topic: string): Promise<number | undefined> {
  const { rows } = await admin.query<{ position: string }>(
    "select position from bus.consumer_offset where group_id = $1 and topic = $2",
    [group, topic],
  );
  return rows[0] ? Number(rows[0].position) : undefined;
}

async function idsOf(topic: string): Promise<{ id: number; value: string }[]> {
  const { rows } = await admin.query<{ id: string; value: string }>(
    "select id, value from bus.message where topic = $1 order by id",
    [topic],
  );
  return rows.map((r) => ({ id: Number(r.id), value: r.value }));
}

beforeAll(async () => {
  tdb = await createTestDatabase("kitbus");
  await migrateBus(tdb.url);
  admin = new pg.Client({ connectionString: tdb.url });
  await admin.connect();
});

afterAll(async () => {
  await Promise.all(subs.map((s) => s.stop()));
  await Promise.all(buses.map((b) => b.close()));
  await admin?.end();
  await tdb?.drop();
});

describe("PgBus", () => {
  it("lag() counts the topic's messages after the group's position: all before it reads, none once it caught up", async () => {
    const b = bus();
    const topic = uniq("lag");
    const group = uniq("g");
    await b.publish(topic, msgs("m", 1, 5));
    expect(await b.lag(group, topic)).toBe(5);
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const got: BusMessage[] = [];
    subs.push(
      await b.subscribe({
        group,
        topic,
        handler: async (batch) => {
          got.push(...batch);
          await gate;
        },
      }),
    );
    await waitFor(got, 5);
    // Handled, not committed: still behind.
    expect(await b.lag(group, topic)).toBe(5);
    release();
    await eventually(async () => ((await b.lag(group, topic)) === 0 ? true : undefined));
    await b.publish(topic, msgs("m", 6, 7));
    await waitFor(got, 7);
    await eventually(async () => ((await b.lag(group, topic)) === 0 ? true : undefined));
  });

  it("migrateBus is idempotent", async () => {
    await migrateBus(tdb.url);
    await migrateBus(tdb.url);
    const { rows } = await admin.query("select count(*)::int as n from bus.kysely_migration");
    expect(rows[0].n).toBe(1);
  });

  it("redelivers a batch whose handler threw, and advances the position only after success", async () => {
    const b = bus({ pollIntervalMs: 30 });
    const topic = uniq("retry");
    const group = "g-retry";
    await b.publish(topic, msgs("r", 1, 4));
    const [{ id: lastId }] = (await idsOf(topic)).slice(-1);

    let accept = false;
    const attempts: string[][] = [];
    const accepted: string[] = [];
    subs.push(
      await b.subscribe({
        group,
        topic,
        handler: async (batch) => {
          attempts.push(batch.map((m) => m.value));
          if (!accept) throw new Error("handler not ready");
          accepted.push(...batch.map((m) => m.value));
        },
      }),
    );
    await waitFor(attempts, 3);
    // Every failed attempt saw the same messages again, from the first one.
    for (const a of attempts.slice(0, 3)) expect(a).toEqual(["r-1", "r-2", "r-3", "r-4"]);
    expect(accepted).toEqual([]);
    expect(await position(group, topic)).toBeFalsy();

    accept = true;
    await waitFor(accepted, 4);
    expect(accepted).toEqual(["r-1", "r-2", "r-3", "r-4"]);
    await eventually(async () => ((await position(group, topic)) === lastId ? true : undefined));

    // Later messages come after, and nothing already accepted comes again.
    await b.publish(topic, msgs("r", 5, 6));
    await waitFor(accepted, 6);
    await new Promise((r) => setTimeout(r, 150));
    expect(accepted).toEqual(["r-1", "r-2", "r-3", "r-4", "r-5", "r-6"]);
  });

  it("redelivers from the failed batch on, keeping the batches that succeeded", async () => {
    const b = bus({ pollIntervalMs: 30, batchSize: 3 });
    const topic = uniq("partial");
    await b.publish(topic, msgs("p", 1, 7));
    let failures = 2;
    const accepted: string[] = [];
    subs.push(
      await b.subscribe({
        group: "g-partial",
        topic,
        handler: async (batch) => {
          if (batch[0]!.value === "p-4" && failures > 0) {
            failures--;
            throw new Error("second batch fails twice");
          }
          accepted.push(...batch.map((m) => m.value));
        },
      }),
    );
    await waitFor(accepted, 7);
    await new Promise((r) => setTimeout(r, 150));
    expect(accepted).toEqual(["p-1", "p-2", "p-3", "p-4", "p-5", "p-6", "p-7"]);
    expect(failures).toBe(0);
  });

  it("delivers messages of concurrent publishers exactly once, in id order, none skipped", async () => {
    const topic = uniq("concurrent");
    const sub = bus({ pollIntervalMs: 5, batchSize: 25 });
    const { got } = await collect(sub, topic, "g-concurrent");
    const publishers = [bus(), bus(), bus(), bus(), bus()];
    const PUBLISHERS = 10;
    const EACH = 50;
    await Promise.all(
      Array.from({ length: PUBLISHERS }, async (_, p) => {
        const b = publishers[p % publishers.length]!;
        for (let i = 0; i < EACH; i++) await b.publish(topic, [{ key: `org_${p}`, value: `p${p}-${i}` }]);
      }),
    );
    await waitFor(got, PUBLISHERS * EACH, 20_000);
    await new Promise((r) => setTimeout(r, 150));
    const values = got.map((m) => m.value);
    expect(values).toHaveLength(PUBLISHERS * EACH);
    expect(new Set(values).size).toBe(PUBLISHERS * EACH);
    // In the order of the ids the bus assigned...
    expect(values).toEqual((await idsOf(topic)).map((r) => r.value));
    // ...which keeps each publisher's own order.
    for (let p = 0; p < PUBLISHERS; p++) {
      const mine = values.filter((v) => v.startsWith(`p${p}-`));
      expect(mine).toEqual(Array.from({ length: EACH }, (_, i) => `p${p}-${i}`));
    }
  });

  it("listens again when its LISTEN connection ends, so a message wakes it without waiting for a poll", async () => {
    // Polling once a minute: within the test's waits, only a NOTIFY delivers.
    const b = bus({ pollIntervalMs: 60_000 });
    const topic = uniq("relisten");
    const group = uniq("g-relisten");
    const { got } = await collect(b, topic, group);
    const listeners = async () =>
      (
        await admin.query<{ pid: number }>("select pid from pg_stat_activity where application_name = $1", [
          `bus-listen-${group}`,
        ])
      ).rows.map((r) => r.pid);
    await eventually(async () => ((await listeners()).length === 1 ? true : undefined));
    await b.publish(topic, msgs("before", 1, 1));
    await waitFor(got, 1, 5_000);

    const [old] = await listeners();
    await admin.query("select pg_terminate_backend($1)", [old]);
    await eventually(async () => {
      const now = await listeners();
      return now.length === 1 && now[0] !== old ? true : undefined;
    });
    await b.publish(topic, msgs("after", 1, 1));
    await waitFor(got, 2, 5_000);
    expect(got.map((m) => m.value)).toEqual(["before-1", "after-1"]);
  });

  it("prune() deletes only messages every group has read and older than the retention", async () => {
    const keeper = bus({ retentionHours: 0 });
    await keeper.prune(); // clear what earlier tests left read
    const topic = uniq("prune");
    const fast = await collect(bus(), topic, "g-prune-fast");
    const slow = await collect(bus(), topic, "g-prune-slow");
    await keeper.publish(topic, msgs("old", 1, 10));
    await waitFor(fast.got, 10);
    await waitFor(slow.got, 10);
    await slow.sub.stop();
    await keeper.publish(topic, msgs("new", 1, 5));
    await waitFor(fast.got, 15);
    const unread = uniq("unread");
    await keeper.publish(unread, msgs("u", 1, 3)); // a topic no group reads

    // The default retention (72 h) keeps everything.
    expect(await bus().prune()).toBe(0);
    expect(await idsOf(topic)).toHaveLength(15);

    // With no retention, what every group read goes; what one group has not read stays.
    expect(await keeper.prune()).toBe(10);
    expect((await idsOf(topic)).map((r) => r.value)).toEqual(msgs("new", 1, 5).map((m) => m.value));
    expect(await idsOf(unread)).toHaveLength(3);

    // Once the slow group catches up, the rest can go too.
    const again = await collect(bus(), topic, "g-prune-slow");
    await waitFor(again.got, 5);
    await eventually(async () => ((await position("g-prune-slow", topic)) ? true : undefined));
    await new Promise((r) => setTimeout(r, 20));
    expect(await keeper.prune()).toBe(5);
    expect(await idsOf(topic)).toHaveLength(0);
    expect(await idsOf(unread)).toHaveLength(3);
  });
});
