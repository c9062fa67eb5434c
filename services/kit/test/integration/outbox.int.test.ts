/** The outbox and its relay, against the real Postgres and the Postgres-table bus. */
import { randomBytes } from "node:crypto";
import pg from "pg";
import { sql, type Kysely } from "kysely";
import { PgBus, migrateBus, type Bus, type BusMessage, type SubscribeOptions } from "@dpp/bus";
import { createDb, migrateSchema } from "../../src/db";
import { newId, type DomainEvent } from "@dpp/contract";
import { DOMAIN_EVENTS_TOPIC } from "../../src/events";
import { createLogger } from "../../src/logger";
import {
  OutboxRelay,
  createOutboxTable,
  migrateOutbox,
  outboxInsert,
  outboxSettled,
  writeOutbox,
  writeOutboxMany,
  type WithOutbox,
} from "../../src/outbox";
import { backoffMs } from "../../src/jobs";
import { createTestDatabase, eventually, type TestDatabase } from "../../src/testing";

const log = createLogger("kit-outbox-test", "silent");
let tdb: TestDatabase;
let admin: pg.Client;
let realBus: PgBus;
const delivered: BusMessage[] = [];
const dbs: Kysely<WithOutbox>[] = [];
const relays: OutboxRelay[] = [];

/** Wraps the real PgBus and makes its first `failures` publishes throw. */
class FlakyBus implements Bus {
  publishes = 0;
  constructor(
    private readonly inner: Bus,
    private failures: number,
  ) {}
  async publish(topic: string, messages: BusMessage[]): Promise<void> {
    this.publishes++;
    if (this.failures > 0) {
      this.failures--;
      throw new Error("bus unavailable");
    }
    await this.inner.publish(topic, messages);
  }
  subscribe(options: SubscribeOptions) {
    return this.inner.subscribe(options);
  }
  status() {
    return this.inner.status();
  }
  onStatusChange(listener: () => void) {
    return this.inner.onStatusChange(listener);
  }
  async close(): Promise<void> {}
}

function event(org = "org_outbox", type = "passport.created"): DomainEvent {
  return {
    id: newId("evt"),
    type,
    organization_id: org,
    livemode: false,
    created_at: new Date().toISOString(),
    related: { object: "passport", id: newId("pp"), note: null, tags: ["a", "b"] },
  };
}

/** A fresh service schema holding an outbox table, as a service's first migration creates it. */
async function scratch(label: string): Promise<{ db: Kysely<WithOutbox>; schema: string }> {
  const schema = `ob_${label}_${randomBytes(3).toString("hex")}`;
  const db = createDb<WithOutbox>({ url: tdb.url, schema, applicationName: "kit-outbox-test", max: 3 });
  dbs.push(db);
  await migrateSchema(db, schema, { "0001_outbox": { up: (d) => createOutboxTable(d) } });
  return { db, schema };
}

function relay(db: Kysely<WithOutbox>, schema: string, bus: Bus = realBus, extra = {}): OutboxRelay {
  const r = new OutboxRelay(db, bus, log, { schema, ...extra });
  relays.push(r);
  return r;
}

async function writeCommitted(db: Kysely<WithOutbox>, ...events: DomainEvent[]): Promise<void> {
  await db.transaction().execute(async (trx) => {
    for (const e of events) await writeOutbox(trx, e);
  });
}

/** Event ids as they sit on the bus, in bus (id) order: what any consumer will see. */
async function onBus(ids: string[]): Promise<string[]> {
  const { rows } = await admin.query<{ value: string }>(
    "select value from bus.message where topic = $1 order by id",
    [DOMAIN_EVENTS_TOPIC],
  );
  const wanted = new Set(ids);
  return rows.map((r) => (JSON.parse(r.value) as DomainEvent).id).filter((id) => wanted.has(id));
}

async function outboxRows(
  schema: string,
): Promise<{ id: number; ord: number; event_id: string; sent: boolean }[]> {
  const { rows } = await admin.query<{ id: string; ord: string; event_id: string; sent: boolean }>(
    `select id, ord, event_id, sent_at is not null as sent from ${schema}.outbox order by id`,
  );
  return rows.map((r) => ({ ...r, id: Number(r.id), ord: Number(r.ord) }));
}

/** Until a commit holds an organization's commit-order lock (taken in share mode while it numbers its rows). */
async function untilACommitHoldsItsLock(): Promise<void> {
  await eventually(async () => {
    const { rows } = await admin.query(
      "select 1 from pg_locks where locktype = 'advisory' and mode = 'ShareLock' and granted",
    );
    return rows.length > 0 ? true : undefined;
  });
}

const deliveredIds = (ids: string[]) =>
  delivered.map((m) => (JSON.parse(m.value) as DomainEvent).id).filter((id) => ids.includes(id));

beforeAll(async () => {
  tdb = await createTestDatabase("kitoutbox");
  await migrateBus(tdb.url);
  admin = new pg.Client({ connectionString: tdb.url });
  await admin.connect();
  realBus = new PgBus({ url: tdb.url, log, pollIntervalMs: 50 });
  await realBus.subscribe({
    group: "outbox-test",
    topic: DOMAIN_EVENTS_TOPIC,
    handler: async (batch) => void delivered.push(...batch),
  });
});

afterAll(async () => {
  await Promise.all(relays.map((r) => r.stop()));
  await realBus?.close();
  await Promise.all(dbs.map((d) => d.destroy()));
  await admin?.end();
  await tdb?.drop();
});

describe("outbox", () => {
  it("writes nothing when the transaction rolls back", async () => {
    const { db, schema } = await scratch("rollback");
    await expect(
      db.transaction().execute(async (trx) => {
        await writeOutbox(trx, event());
        throw new Error("state change failed");
      }),
    ).rejects.toThrow("state change failed");
    expect(await outboxRows(schema)).toEqual([]);
    expect(await relay(db, schema).drain()).toBe(0);
  });

  it("relays committed rows to the bus (key = organization, value = the event) and marks them sent", async () => {
    const { db, schema } = await scratch("relay");
    const a = event("org_a");
    const b = event("org_b", "passport.updated");
    await writeCommitted(db, a, b);
    expect((await outboxRows(schema)).map((r) => r.sent)).toEqual([false, false]);

    const r = relay(db, schema);
    expect(await r.drain()).toBe(2);
    expect((await outboxRows(schema)).map((row) => row.sent)).toEqual([true, true]);
    expect(await r.drain()).toBe(0);

    await eventually(async () => (deliveredIds([a.id, b.id]).length === 2 ? true : undefined));
    const got = delivered.filter((m) => [a.id, b.id].includes((JSON.parse(m.value) as DomainEvent).id));
    expect(got.map((m) => [m.key, JSON.parse(m.value)])).toEqual([
      ["org_a", a],
      ["org_b", b],
    ]);
    expect(await onBus([a.id, b.id])).toEqual([a.id, b.id]);
  });

  it("leaves rows unsent while the bus fails, and sends them once on a later pass", async () => {
    const { db, schema } = await scratch("flaky");
    const events = [event(), event(), event()];
    const ids = events.map((e) => e.id);
    await writeCommitted(db, ...events);
    const flaky = new FlakyBus(realBus, 2);
    const r = relay(db, schema, flaky);

    await expect(r.drain()).rejects.toThrow("bus unavailable");
    await expect(r.drain()).rejects.toThrow("bus unavailable");
    expect((await outboxRows(schema)).every((row) => !row.sent)).toBe(true);
    expect(await onBus(ids)).toEqual([]);

    expect(await r.drain()).toBe(3);
    expect((await outboxRows(schema)).every((row) => row.sent)).toBe(true);
    expect(await onBus(ids)).toEqual(ids);
    expect(flaky.publishes).toBe(3);
    await eventually(async () => (deliveredIds(ids).length >= 3 ? true : undefined));
    expect(deliveredIds(ids)).toEqual(ids);
  });

  it("retries by itself once started, until the bus accepts", async () => {
    const { db, schema } = await scratch("auto");
    const events = [event(), event()];
    const ids = events.map((e) => e.id);
    const flaky = new FlakyBus(realBus, 3);
    const r = relay(db, schema, flaky, { intervalMs: 30 });
    r.start();
    await writeCommitted(db, ...events);
    r.wake();
    await eventually(async () => ((await outboxRows(schema)).every((row) => row.sent) ? true : undefined));
    await r.stop();
    expect(flaky.publishes).toBeGreaterThanOrEqual(4);
    expect(await onBus(ids)).toEqual(ids);
  });

  it("relays rows in outbox id order", async () => {
    const { db, schema } = await scratch("order");
    const events = Array.from({ length: 8 }, () => event());
    for (const e of events.slice(0, 5)) await writeCommitted(db, e);
    await writeCommitted(db, ...events.slice(5));
    const order = (await outboxRows(schema)).map((row) => row.event_id);
    expect(order).toEqual(events.map((e) => e.id));

    expect(await relay(db, schema, realBus, { batchSize: 3 }).drain()).toBe(8);
    expect(await onBus(order)).toEqual(order);
    await eventually(async () => (deliveredIds(order).length >= 8 ? true : undefined));
    expect(deliveredIds(order)).toEqual(order);
  });

  it("does not skip a row that commits after a row with a higher id was sent", async () => {
    const { db, schema } = await scratch("late");
    // Two organizations: their writers do not wait for each other.
    const early = event("org_late_1");
    const late = event("org_late_2");
    const open = await db.startTransaction().execute();
    try {
      await writeOutbox(open, early); // draws the lower id, commits last
      await writeCommitted(db, late);
      const r = relay(db, schema);
      expect(await r.drain()).toBe(1);
      expect(await onBus([early.id, late.id])).toEqual([late.id]);
      await open.commit().execute();
      expect(await r.drain()).toBe(1);
    } catch (err) {
      await open.rollback().execute();
      throw err;
    }
    const rows = await outboxRows(schema);
    expect(rows.map((row) => row.event_id)).toEqual([early.id, late.id]);
    expect(rows.every((row) => row.sent)).toBe(true);
    expect(await onBus([early.id, late.id])).toEqual([late.id, early.id]);
  });

  it("never sends a row twice when two relays drain the same schema at once", async () => {
    const { db, schema } = await scratch("pair");
    // Two replicas: each its own pool.
    const otherDb = createDb<WithOutbox>({
      url: tdb.url,
      schema,
      applicationName: "kit-outbox-test-2",
      max: 3,
    });
    dbs.push(otherDb);
    const r1 = relay(db, schema, realBus, { batchSize: 7 });
    const r2 = relay(otherDb, schema, realBus, { batchSize: 7 });
    const all: string[] = [];
    for (let round = 0; round < 5; round++) {
      const events = Array.from({ length: 30 }, () => event());
      all.push(...events.map((e) => e.id));
      await writeCommitted(db, ...events);
      const [n1, n2] = await Promise.all([r1.drain(), r2.drain()]);
      expect(n1 + n2).toBe(30);
    }
    expect((await outboxRows(schema)).every((row) => row.sent)).toBe(true);
    const sent = await onBus(all);
    expect(sent).toHaveLength(all.length);
    expect(new Set(sent).size).toBe(all.length);
    await eventually(async () => (deliveredIds(all).length >= all.length ? true : undefined));
    await new Promise((r) => setTimeout(r, 150));
    expect(deliveredIds(all)).toHaveLength(all.length);
  });

  it("deletes sent rows older than the retention, and keeps them within it", async () => {
    const { db, schema } = await scratch("prune");
    await writeCommitted(db, event(), event());
    expect(await relay(db, schema).drain()).toBe(2);
    // A relay with the default retention (7 days) keeps them.
    expect(await relay(db, schema).drain()).toBe(0);
    expect(await outboxRows(schema)).toHaveLength(2);
    // A relay with no retention prunes them on its first pass.
    await new Promise((r) => setTimeout(r, 10));
    expect(await relay(db, schema, realBus, { retentionHours: 0 }).drain()).toBe(0);
    expect(await outboxRows(schema)).toEqual([]);
  });

  it("numbers one organization's rows in commit order, at commit: an open writer holds no other writer back", async () => {
    const { db, schema } = await scratch("orgorder");
    const first = event("org_serial");
    const second = event("org_serial");
    const open = await db.startTransaction().execute();
    try {
      await writeOutbox(open, first); // draws the lower id, commits last
      await writeCommitted(db, second); // neither its statement nor its commit waits for the open writer
      await open.commit().execute();
    } catch (err) {
      await open.rollback().execute();
      throw err;
    }
    const rows = await outboxRows(schema);
    expect(rows.map((r) => r.event_id)).toEqual([first.id, second.id]);
    // The second committed first: it is numbered first, and relayed first.
    expect(rows[1]!.ord).toBeLessThan(rows[0]!.ord);
    expect(await relay(db, schema).drain()).toBe(2);
    expect(await onBus([first.id, second.id])).toEqual([second.id, first.id]);
  });

  it("relays in commit order rows whose ids were drawn in the reverse order, whatever the batch size and the bus", async () => {
    for (const batchSize of [1, 2, 3]) {
      // The Postgres-table bus of this database (moved in one statement), and the same bus behind another object
      // (published batch by batch, as to Kafka).
      for (const bus of [realBus, new FlakyBus(realBus, 0)]) {
        const { db, schema } = await scratch(`reverse${batchSize}`);
        const [first, second, third] = [event("org_reverse"), event("org_reverse"), event("org_reverse")];
        const a = await db.startTransaction().execute();
        const b = await db.startTransaction().execute();
        try {
          await writeOutbox(a, first); // the lowest id, committed last
          await writeOutbox(b, second);
          await writeCommitted(db, third); // the highest id, committed first
          await b.commit().execute();
          await a.commit().execute();
        } catch (err) {
          await b
            .rollback()
            .execute()
            .catch(() => undefined);
          await a
            .rollback()
            .execute()
            .catch(() => undefined);
          throw err;
        }
        expect((await outboxRows(schema)).map((r) => r.event_id)).toEqual([first.id, second.id, third.id]);
        expect(await relay(db, schema, bus, { batchSize }).drain()).toBe(3);
        expect(await onBus([first.id, second.id, third.id])).toEqual([third.id, second.id, first.id]);
      }
    }
  });

  it("publishes a batch in commit order whatever the table's physical order (rewritten in id order, as CLUSTER or pg_repack leave it)", async () => {
    for (const bus of [realBus, new FlakyBus(realBus, 0)]) {
      const { db, schema } = await scratch("rewritten");
      const [first, second, third] = [event("org_rewritten"), event("org_rewritten"), event("org_rewritten")];
      const a = await db.startTransaction().execute();
      const b = await db.startTransaction().execute();
      try {
        await writeOutbox(a, first); // the lowest id, committed last
        await writeOutbox(b, second);
        await writeCommitted(db, third); // the highest id, committed first
        await b.commit().execute();
        await a.commit().execute();
      } catch (err) {
        await b
          .rollback()
          .execute()
          .catch(() => undefined);
        await a
          .rollback()
          .execute()
          .catch(() => undefined);
        throw err;
      }
      await admin.query(`cluster ${schema}.outbox using outbox_pkey`);
      expect(await relay(db, schema, bus, { batchSize: 3 }).drain()).toBe(3);
      expect(await onBus([first.id, second.id, third.id])).toEqual([third.id, second.id, first.id]);
    }
  });

  it("lets the relay's read see one organization's rows only as a prefix of their numbers, under concurrent writers", async () => {
    const { db, schema } = await scratch("orgconc");
    const org = "org_conc";
    // What a reader that reads as the relay does (the barrier, then a read of what it settled) saw of the
    // organization, read after read, while 8 writers commit 10 transactions each with random delays around
    // the write. A plain read of the table may see a higher number before a lower one whose commit is still
    // ending: the barrier is what keeps the relay from it.
    const snapshots: number[][] = [];
    let writing = true;
    const reader = (async () => {
      while (writing) {
        const settled = await outboxSettled(db, 1000);
        const { rows } = await sql<{ ord: string }>`
          select ord from outbox where organization_id = ${org} and ord <= ${settled.ord}
            and organization_id = any (${settled.organizations}::text[])
          order by ord`.execute(db);
        snapshots.push(rows.map((r) => Number(r.ord)));
      }
    })();
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        for (let i = 0; i < 10; i++) {
          await db.transaction().execute(async (trx) => {
            await new Promise((r) => setTimeout(r, Math.random() * 4));
            await writeOutbox(trx, event(org));
            await new Promise((r) => setTimeout(r, Math.random() * 4));
          });
        }
      }),
    );
    writing = false;
    await reader;
    const rows = (await outboxRows(schema)).sort((a, b) => a.ord - b.ord);
    expect(rows).toHaveLength(80);
    const all = rows.map((r) => r.ord);
    expect(snapshots.filter((seen) => seen.length > 0 && seen.length < 80).length).toBeGreaterThan(5);
    // Never a row with a higher number before every lower one committed.
    for (const seen of snapshots) expect(seen).toEqual(all.slice(0, seen.length));
    // The writers' ids were drawn in another order than they committed in (the delays see to it).
    expect(rows.map((r) => r.id)).not.toEqual([...rows.map((r) => r.id)].sort((a, b) => a - b));
    const r = relay(db, schema, realBus, { batchSize: 7 });
    expect(await r.drain()).toBe(80);
    const ids = rows.map((row) => row.event_id);
    expect(await onBus(ids)).toEqual(ids);
  });

  it("holds an organization's later rows back while one of its commits is still ending; other organizations go on", async () => {
    const { db, schema } = await scratch("slowcommit");
    // A commit that takes 600 ms after its number is drawn: a second deferred trigger, fired after the
    // commit-order trigger (triggers of one event fire in name order), sleeps for the first row of org_slow.
    await admin.query(`
      create function ${schema}.slow_commit() returns trigger language plpgsql as $$
      begin
        if new.organization_id = 'org_slow' and new.type = 'slow.commit' then perform pg_sleep(0.6); end if;
        return null;
      end $$;
      create constraint trigger outbox_zz_slow after insert on ${schema}.outbox
        deferrable initially deferred for each row execute function ${schema}.slow_commit()`);
    const slow = event("org_slow", "slow.commit");
    const after = event("org_slow");
    const other = event("org_other");
    const slowCommit = writeCommitted(db, slow);
    await untilACommitHoldsItsLock();
    // Numbered after the slow row, committed before it ends.
    await writeCommitted(db, after);
    await writeCommitted(db, other);
    const r = relay(db, schema, realBus, { settleTimeoutMs: 50 });
    expect(await r.drain()).toBe(1);
    expect(await onBus([slow.id, after.id, other.id])).toEqual([other.id]);
    await slowCommit;
    expect(await r.drain()).toBe(2);
    expect(await onBus([slow.id, after.id, other.id])).toEqual([other.id, slow.id, after.id]);
  });

  it("writes a batch as rows numbered at commit in its order, among the transaction's other events, each relayed once", async () => {
    const { db, schema } = await scratch("batch");
    const before = event("org_batch");
    const batch = [event("org_batch"), event("org_batch_b"), event("org_batch"), event("org_batch_b")];
    const after = event("org_batch");
    await db.transaction().execute(async (trx) => {
      await writeOutbox(trx, before);
      await writeOutboxMany(trx, batch);
      // Not in the outbox before the commit: the batch is staged.
      const { rows } = await sql<{ n: number }>`select count(*)::int as n from outbox`.execute(trx);
      expect(rows[0]!.n).toBe(1);
      await writeOutbox(trx, after);
    });
    const written = [before, ...batch, after].map((e) => e.id);
    const rows = await outboxRows(schema);
    const byOrd = [...rows].sort((a, b) => a.ord - b.ord);
    expect(byOrd.map((r) => r.event_id)).toEqual(written);
    expect(new Set(rows.map((r) => r.ord)).size).toBe(6);
    const payloads = await admin.query<{ payload: DomainEvent }>(
      `select payload from ${schema}.outbox where event_id = $1`,
      [batch[1]!.id],
    );
    expect(payloads.rows[0]!.payload).toEqual(batch[1]);
    const staged = await admin.query(`select 1 from ${schema}.outbox_stage`);
    expect(staged.rowCount).toBe(0);
    expect(await relay(db, schema).drain()).toBe(6);
    expect(await onBus(written)).toEqual(written);
    expect(await relay(db, schema).drain()).toBe(0);
  });

  it("leaves nothing of a batch whose transaction rolls back: no outbox row, no staged row", async () => {
    const { db, schema } = await scratch("batchrb");
    await expect(
      db.transaction().execute(async (trx) => {
        await writeOutboxMany(trx, [event(), event()]);
        throw new Error("rolled back");
      }),
    ).rejects.toThrow("rolled back");
    expect(await outboxRows(schema)).toEqual([]);
    expect((await admin.query(`select 1 from ${schema}.outbox_stage`)).rowCount).toBe(0);
  });

  it("numbers a batch at its commit: an open batch holds no other writer back, and is relayed after a row that committed first", async () => {
    const { db, schema } = await scratch("batchorder");
    const batch = [event("org_bo"), event("org_bo")];
    const single = event("org_bo");
    const open = await db.startTransaction().execute();
    try {
      await writeOutboxMany(open, batch);
      await writeCommitted(db, single);
      await open.commit().execute();
    } catch (err) {
      await open.rollback().execute();
      throw err;
    }
    expect(await relay(db, schema).drain()).toBe(3);
    const ids = [single, ...batch].map((e) => e.id);
    expect(await onBus(ids)).toEqual(ids);
  });

  it("holds an organization's later rows back while a batch of it is still committing", async () => {
    const { db, schema } = await scratch("batchslow");
    // The batch's commit takes 600 ms after its rows were numbered: a second deferred trigger on the stage, fired
    // after outbox_stage_commit (name order), sleeps.
    await admin.query(`
      create function ${schema}.slow_stage() returns trigger language plpgsql as $$
      begin perform pg_sleep(0.6); return null; end $$;
      create constraint trigger outbox_stage_zz_slow after insert on ${schema}.outbox_stage
        deferrable initially deferred for each row execute function ${schema}.slow_stage()`);
    const batch = [event("org_bslow"), event("org_bslow")];
    const after = event("org_bslow");
    const other = event("org_bother");
    const slowCommit = db.transaction().execute((trx) => writeOutboxMany(trx, batch));
    await untilACommitHoldsItsLock();
    await writeCommitted(db, after);
    await writeCommitted(db, other);
    const r = relay(db, schema, realBus, { settleTimeoutMs: 50 });
    const ids = [...batch, after, other].map((e) => e.id);
    expect(await r.drain()).toBe(1);
    expect(await onBus(ids)).toEqual([other.id]);
    await slowCommit;
    expect(await r.drain()).toBe(3);
    expect(await onBus(ids)).toEqual([other.id, batch[0]!.id, batch[1]!.id, after.id]);
  });

  it("never leaves an organization's lock held after its barrier, even when the wait times out as the lock is granted", async () => {
    // Six sessions take the organization's lock in share mode, one after another and overlapping, as committing
    // writers do, while the barrier waits at most 2 ms for it, again and again: some waits are granted, some
    // time out, and some time out at the moment they are granted. A lock the barrier kept would make every later
    // commit of the organization wait for the barrier's pooled connection.
    const { db: writerDb, schema } = await scratch("barrierleak");
    await writeCommitted(writerDb, event("org_leak"));
    const app = `kit-outbox-barrier-${randomBytes(3).toString("hex")}`;
    const barrierDb = createDb<WithOutbox>({ url: tdb.url, schema, applicationName: app, max: 1 });
    dbs.push(barrierDb);
    const lockKey = `hashtextextended('outbox-commit:${schema}:org_leak', 0)`;
    let stop = false;
    const writers = await Promise.all(
      Array.from({ length: 6 }, async () => {
        const c = new pg.Client({ connectionString: tdb.url });
        await c.connect();
        // A kept lock would hold the writers back for good: they give up after a second.
        await c.query("set lock_timeout = '1s'");
        const loop = (async () => {
          while (!stop) {
            await c.query("begin");
            await c.query(`select pg_advisory_xact_lock_shared(${lockKey})`);
            await c.query("select pg_sleep($1)", [Math.random() * 0.004]);
            await c.query("commit");
          }
        })().catch(() => c.query("rollback"));
        return { c, loop };
      }),
    );
    const heldByBarrier = async () =>
      (
        await admin.query<{ n: number }>(
          `select count(*)::int as n from pg_locks l join pg_stat_activity a on a.pid = l.pid
           where a.application_name = $1 and l.locktype = 'advisory' and l.granted`,
          [app],
        )
      ).rows[0]!.n;
    let calls = 0;
    let leaked = 0;
    const until = Date.now() + 3000;
    try {
      while (Date.now() < until && leaked === 0) {
        await outboxSettled(barrierDb, 10, 2);
        calls++;
        leaked = await heldByBarrier();
      }
    } finally {
      stop = true;
      await Promise.all(writers.map((w) => w.loop));
      await Promise.all(writers.map((w) => w.c.end()));
    }
    expect({ calls, leaked }).toEqual({ calls: expect.any(Number), leaked: 0 });
    expect(calls).toBeGreaterThan(10);
    // With the writers gone the lock is free: another session takes it at once.
    const { rows } = await admin.query<{ got: boolean }>(
      `select pg_try_advisory_xact_lock(${lockKey}) as got`,
    );
    expect(rows[0]!.got).toBe(true);
    expect(await outboxSettled(barrierDb, 10, 2)).toEqual({
      ord: expect.any(Number),
      organizations: ["org_leak"],
    });
  });

  it("upgrades an outbox made before commit-order numbers: unsent rows keep their order, ahead of new ones", async () => {
    const schema = `ob_upgrade_${randomBytes(3).toString("hex")}`;
    // The outbox as createOutboxTable made it before the order number, with two rows still unsent.
    await admin.query(`create schema ${schema}`);
    await admin.query(`
      create table ${schema}.outbox (
        id bigserial primary key, event_id text not null unique, organization_id text not null,
        livemode boolean not null, type text not null, payload jsonb not null, trace_context jsonb,
        created_at timestamptz not null default now(), sent_at timestamptz);
      create index outbox_unsent_idx on ${schema}.outbox (id) where sent_at is null`);
    const old = [event("org_upgrade"), event("org_upgrade")];
    for (const e of old)
      await admin.query(
        `insert into ${schema}.outbox (event_id, organization_id, livemode, type, payload) values ($1, $2, false, $3, $4)`,
        [e.id, e.organization_id, e.type, JSON.stringify(e)],
      );
    await migrateOutbox(tdb.url, schema);
    await migrateOutbox(tdb.url, schema); // a second run changes nothing
    const db = createDb<WithOutbox>({ url: tdb.url, schema, applicationName: "kit-outbox-test", max: 3 });
    dbs.push(db);
    const later = event("org_upgrade");
    await writeCommitted(db, later);
    const rows = await outboxRows(schema);
    expect(rows.map((r) => r.ord)).toEqual([rows[0]!.id, rows[1]!.id, expect.any(Number)]);
    expect(rows[2]!.ord).toBeGreaterThan(rows[1]!.ord);
    expect(await relay(db, schema).drain()).toBe(3);
    const ids = [...old, later].map((e) => e.id);
    expect(await onBus(ids)).toEqual(ids);
  });

  it("upgrades an outbox whose numbers were drawn under an exclusive lock: writers share the lock, the relay waits at its barrier", async () => {
    const { db, schema } = await scratch("upshared");
    await migrateOutbox(tdb.url, schema);
    // Back to the shape of the previous kit (decision 0035): the organization's lock taken exclusively at commit,
    // no barrier function, the migration not recorded.
    await admin.query(`
      create or replace function ${schema}.outbox_commit_order() returns trigger language plpgsql as $$
      begin
        perform pg_advisory_xact_lock(hashtextextended('outbox:' || '${schema}' || ':' || new.organization_id, 0));
        update ${schema}.outbox set ord = nextval('${schema}.outbox_ord_seq') where id = new.id;
        return null;
      end $$;
      drop function ${schema}.outbox_settled(int, int);
      delete from ${schema}.kit_outbox_migration where name in ('0003_shared_commit_lock', '0004_barrier_lock_released_by_rollback')`);
    const before = event("org_upshared");
    await writeCommitted(db, before);
    await expect(outboxSettled(db, 10)).rejects.toThrow(/outbox_settled/);

    await migrateOutbox(tdb.url, schema);
    const { rows } = await admin.query<{ def: string }>(
      `select pg_get_functiondef('${schema}.outbox_commit_order'::regproc) as def`,
    );
    expect(rows[0]!.def).toContain("pg_advisory_xact_lock_shared");
    const barrier = await admin.query<{ def: string }>(
      `select pg_get_functiondef('${schema}.outbox_settled'::regproc) as def`,
    );
    expect(barrier.rows[0]!.def).toContain("pg_advisory_xact_lock(k)");
    expect(barrier.rows[0]!.def).not.toContain("pg_advisory_lock(");
    const after = event("org_upshared");
    await writeCommitted(db, after);
    expect(await outboxSettled(db, 10)).toEqual({ ord: expect.any(Number), organizations: ["org_upshared"] });
    expect(await relay(db, schema).drain()).toBe(2);
    expect(await onBus([before.id, after.id])).toEqual([before.id, after.id]);
  });

  it("keeps accepting writes while the bus is down, backs off, and delivers everything in order afterwards", async () => {
    const { db, schema } = await scratch("down");
    let down = true;
    let attempts = 0;
    const outage: Bus = {
      publish: async (topic, messages) => {
        attempts++;
        if (down) throw new Error("broker unreachable");
        await realBus.publish(topic, messages);
      },
      subscribe: (o) => realBus.subscribe(o),
      status: () => realBus.status(),
      onStatusChange: (l) => realBus.onStatusChange(l),
      close: async () => undefined,
    };
    const r = relay(db, schema, outage, { intervalMs: 20, backoffMinMs: 20, backoffMaxMs: 200 });
    r.start();
    const written: DomainEvent[] = [];
    for (let i = 0; i < 30; i++) {
      const e = event(i % 2 ? "org_down_a" : "org_down_b");
      await writeCommitted(db, e); // succeeds although the bus is down
      written.push(e);
      r.wake();
    }
    await eventually(async () => (r.consecutiveFailures >= 3 ? true : undefined));
    expect((await outboxRows(schema)).every((row) => !row.sent)).toBe(true);
    expect(await onBus(written.map((e) => e.id))).toEqual([]);
    // Backing off: far fewer attempts than the 30 wakes plus timer ticks.
    expect(attempts).toBeLessThan(30);

    down = false;
    await eventually(async () => ((await outboxRows(schema)).every((row) => row.sent) ? true : undefined));
    await r.stop();
    expect(r.consecutiveFailures).toBe(0);
    const ids = written.map((e) => e.id);
    expect(await onBus(ids)).toEqual(ids);
    await eventually(async () => (deliveredIds(ids).length >= ids.length ? true : undefined));
    expect(deliveredIds(ids)).toEqual(ids);
  });
});

describe("outboxInsert: the event in the statement of the write", () => {
  /** A schema with an outbox and an `item` table whose rows carry the time of their write. */
  async function withItems(label: string) {
    const schema = `ob_${label}_${randomBytes(3).toString("hex")}`;
    const db = createDb<any>({ url: tdb.url, schema, applicationName: "kit-outbox-test", max: 3 });
    dbs.push(db);
    await migrateSchema(db, schema, {
      "0001": {
        async up(d) {
          await createOutboxTable(d);
          await sql`create table item (name text primary key, created_at timestamptz not null default now())`.execute(
            d,
          );
        },
      },
    });
    return { db, schema };
  }

  /** Inserts an item unless it exists, and its event with it; the row written, or undefined. */
  async function insertItem(db: Kysely<any>, name: string, e: DomainEvent) {
    const { rows } = await sql<{ name: string; created_at: Date }>`
      with written as (insert into item (name) values (${name}) on conflict do nothing returning *),
      outbox_row as (${outboxInsert(e, "written")})
      select * from written`.execute(db);
    return rows[0];
  }

  it("records the event with the row, its created_at the time the row carries; no row written, no event", async () => {
    const { db, schema } = await withItems("cte");
    const e = event("org_cte");
    const row = await insertItem(db, "one", e);
    expect(row).toBeDefined();
    const { rows } = await admin.query<{ event_id: string; payload: DomainEvent; organization_id: string }>(
      `select event_id, organization_id, payload from ${schema}.outbox order by id`,
    );
    expect(rows).toEqual([
      {
        event_id: e.id,
        organization_id: "org_cte",
        payload: { ...e, created_at: row!.created_at.toISOString() },
      },
    ]);
    expect(await insertItem(db, "one", event("org_cte"))).toBeUndefined();
    expect(await outboxRows(schema)).toHaveLength(1);
    const r = relay(db, schema);
    expect(await r.drain()).toBe(1);
    expect(await onBus([e.id])).toEqual([e.id]);
  });

  it("numbers the event at commit: an open writer of the organization does not hold the write back", async () => {
    const { db, schema } = await withItems("ctelock");
    const first = event("org_cte_serial");
    const second = event("org_cte_serial");
    const open = await db.startTransaction().execute();
    try {
      await writeOutbox(open, first);
      await insertItem(db, "goes on", second);
      await open.commit().execute();
    } catch (err) {
      await open.rollback().execute();
      throw err;
    }
    const rows = (await outboxRows(schema)).sort((a, b) => a.ord - b.ord);
    expect(rows.map((r) => r.event_id)).toEqual([second.id, first.id]);
  });
});

describe("backoffMs (the relay's backoff)", () => {
  it("doubles from the first delay and stops at the cap", () => {
    expect([0, 1, 2, 3, 4, 5, 6, 7, 40].map((f) => backoffMs(f, 500, 30_000))).toEqual([
      0, 500, 1000, 2000, 4000, 8000, 16000, 30000, 30000,
    ]);
  });
});
