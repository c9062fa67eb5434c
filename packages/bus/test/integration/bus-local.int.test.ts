/**
 * The Postgres bus in the service's own database (PgBusOptions.local): the outbox relay moves each batch into
 * the bus table in one statement, and a subscriber that names its pool reads each batch in a transaction its
 * handler joins. Counted here: the statements each path sends. Checked: what a connection lost between two
 * steps leaves (nothing lost, nothing twice), order, and that tracing keeps the relay's publish spans.
 */
import { randomBytes } from "node:crypto";
import pg from "pg";
import { sql, type Kysely } from "kysely";
import { propagation, trace } from "@opentelemetry/api";
import { InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { NodeTracerProvider } from "@opentelemetry/sdk-trace-node";
import { newId, type DomainEvent } from "@dpp/contract";
import { createLogger, createOutboxTable, writeOutbox, type WithOutbox } from "@dpp/kit";
import { OutboxRelay, createDb, migrateSchema } from "@dpp/kit/internal";
import { createTestDatabase, eventually, type TestDatabase } from "@dpp/kit/testing";
import { PgBus, migrateBus, type BusMessage, type Subscription } from "../../src/bus";

const log = createLogger("kit-bus-local-test", "silent");
let tdb: TestDatabase;
let admin: pg.Client;
const closers: Array<() => Promise<unknown>> = [];

/** Every statement sent by a pool whose application_name is a key of `recording`. */
const recording = new Map<string, string[]>();
const clientQuery = pg.Client.prototype.query;

beforeAll(async () => {
  pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
    const config = args[0] as string | { text?: string };
    const name = (this as unknown as { connectionParameters: { application_name?: string } })
      .connectionParameters.application_name;
    const sent = name === undefined ? undefined : recording.get(name);
    sent?.push((typeof config === "string" ? config : (config.text ?? "")).replace(/\s+/g, " ").trim());
    return (clientQuery as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof clientQuery;
  tdb = await createTestDatabase("kitbuslocal");
  await migrateBus(tdb.url);
  admin = new pg.Client({ connectionString: tdb.url });
  await admin.connect();
});

afterAll(async () => {
  for (const close of closers.reverse()) await close();
  await admin?.end();
  await tdb?.drop();
  pg.Client.prototype.query = clientQuery;
});

/** The statements the pool named `app` sent while `fn` ran, each as its first words. */
async function statementsOf(app: string, fn: () => Promise<unknown>): Promise<string[]> {
  const sent: string[] = [];
  recording.set(app, sent);
  try {
    await fn();
  } finally {
    recording.delete(app);
  }
  return sent.map(kind);
}

function kind(text: string): string {
  const s = text.toLowerCase().replace(/"/g, "");
  if (/^(begin|commit|rollback)\b/.test(s)) return s.split(" ")[0]!;
  if (s.includes("outbox_settled(")) return "barrier";
  if (s.includes("update outbox") && s.includes("insert into bus")) return "move to bus";
  if (s.includes("update outbox")) return "mark sent";
  if (s.includes("for update skip locked") && s.includes("bus")) return "read batch";
  const m = /^(insert into|update|delete from|select .*? from) ([\w."]+)/.exec(s);
  return m ? `${m[1]!.split(" ")[0]} ${m[2]}` : s.slice(0, 40);
}

const uniq = (label: string) => `${label}_${randomBytes(3).toString("hex")}`;

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

/** A service schema with an outbox, its pool (application_name `app`) and a bus local to that pool. */
async function service(label: string) {
  const schema = uniq(`bl_${label}`);
  const app = uniq(`svc-${label}`);
  const db = createDb<WithOutbox>({ url: tdb.url, schema, applicationName: app, max: 3 });
  const bus = new PgBus({ url: tdb.url, log, pollIntervalMs: 60_000, local: db });
  closers.push(
    () => db.destroy(),
    () => bus.close(),
  );
  await migrateSchema(db, schema, { "0001_outbox": { up: (d) => createOutboxTable(d) } });
  return { schema, app, db, bus };
}

/** A relay whose first pass (which also runs the retention sweep, then hourly) is done. */
async function relay(
  db: Kysely<WithOutbox>,
  bus: PgBus,
  schema: string,
  extra: { topic?: string; batchSize?: number } = {},
): Promise<OutboxRelay> {
  const r = new OutboxRelay(db, bus, log, { schema, ...extra });
  closers.push(() => r.stop());
  await r.drain();
  return r;
}

async function writeCommitted(db: Kysely<WithOutbox>, ...events: DomainEvent[]): Promise<void> {
  await db.transaction().execute(async (trx) => {
    for (const e of events) await writeOutbox(trx, e);
  });
}

async function onBus(topic: string): Promise<Array<{ key: string; event: DomainEvent }>> {
  const { rows } = await admin.query<{ key: string; value: string }>(
    "select key, value from bus.message where topic = $1 order by id",
    [topic],
  );
  return rows.map((r) => ({ key: r.key, event: JSON.parse(r.value) as DomainEvent }));
}

async function unsent(schema: string): Promise<number> {
  const { rows } = await admin.query<{ n: number }>(
    `select count(*)::int as n from ${schema}.outbox where sent_at is null`,
  );
  return rows[0]!.n;
}

describe("the outbox relay on a bus in its own database", () => {
  it("moves a batch to the bus in one statement after the barrier: marked sent, on the bus in id order, subscribers woken", async () => {
    const { schema, app, db, bus } = await service("move");
    const topic = uniq("move");
    const r = await relay(db, bus, schema, { topic });
    const small = await relay(db, bus, schema, { topic, batchSize: 2 });
    const events = [event("org_a"), event("org_b"), event("org_a")];
    await writeCommitted(db, ...events);
    const listener = new pg.Client({ connectionString: tdb.url });
    await listener.connect();
    closers.push(() => listener.end());
    const woken: string[] = [];
    listener.on("notification", (n) => woken.push(n.payload ?? ""));
    await listener.query("listen dpp_bus");

    let moved = 0;
    expect(await statementsOf(app, async () => void (moved = await r.drain()))).toEqual([
      "barrier",
      "move to bus",
    ]);
    expect(moved).toBe(3);
    expect(await unsent(schema)).toBe(0);
    expect(await onBus(topic)).toEqual(events.map((e) => ({ key: e.organization_id, event: e })));
    await eventually(async () => (woken.includes(topic) ? true : undefined));
    expect(bus.status().publish.failing).toBe(false);

    // Nothing waiting: the barrier alone, which finds nothing, and no one woken.
    const before = woken.length;
    expect(await statementsOf(app, async () => void (moved = await r.drain()))).toEqual(["barrier"]);
    expect(moved).toBe(0);
    await new Promise((done) => setTimeout(done, 100));
    expect(woken).toHaveLength(before);

    // Batches of 2 for 5 rows: three batches, the last one short, and no further look.
    const more = Array.from({ length: 5 }, () => event("org_c"));
    await writeCommitted(db, ...more);
    expect(await statementsOf(app, async () => void (moved = await small.drain()))).toEqual([
      "barrier",
      "move to bus",
      "barrier",
      "move to bus",
      "barrier",
      "move to bus",
    ]);
    expect(moved).toBe(5);
    expect((await onBus(topic)).map((m) => m.event.id)).toEqual([...events, ...more].map((e) => e.id));
  });

  it("leaves the rows unsent when its connection is lost after marking them and before they reached the bus", async () => {
    const { schema, app, db, bus } = await service("lost");
    const topic = uniq("lost");
    const r = await relay(db, bus, schema, { topic });
    const events = [event("org_lost"), event("org_lost"), event("org_other")];
    await writeCommitted(db, ...events);

    // Another session holds the topic's lock: the relay's statement marks the rows, then waits for the lock
    // before inserting them into the bus.
    const holder = new pg.Client({ connectionString: tdb.url });
    await holder.connect();
    closers.push(() => holder.end());
    await holder.query("select pg_advisory_lock(hashtextextended($1, 0))", [`bus:${topic}`]);
    const pass = r.drain();
    const outcome = pass.then(
      () => "done",
      (err: Error) => err.message,
    );
    const { pid } = await eventually(async () => {
      const { rows } = await admin.query<{ pid: number; query: string }>(
        "select pid, query from pg_stat_activity where application_name = $1 and wait_event_type = 'Lock'",
        [app],
      );
      return rows.find((row) => row.query.includes("update outbox"));
    });
    const { rows: locks } = await admin.query(
      "select 1 from pg_locks where pid = $1 and locktype = 'transactionid' and granted",
      [pid],
    );
    expect(locks.length).toBeGreaterThan(0); // it has written (the marks): it holds a transaction id
    await admin.query("select pg_terminate_backend($1)", [pid]);
    expect(await outcome).toMatch(/terminating connection/);
    await holder.query("select pg_advisory_unlock_all()");

    expect(await unsent(schema)).toBe(3);
    expect(await onBus(topic)).toEqual([]);
    expect(bus.status().publish.failing).toBe(true);

    // A later pass (the pool may hand out the dead connection once more before it has seen it close).
    expect(await eventually(() => r.drain().catch(() => undefined))).toBe(3);
    expect((await onBus(topic)).map((m) => m.event.id)).toEqual(events.map((e) => e.id));
    expect(await unsent(schema)).toBe(0);
    expect(bus.status().publish.failing).toBe(false);
  });

  it("never moves a row twice when two replicas drain one schema at once, and keeps each organization's order", async () => {
    const { schema, db, bus } = await service("pair");
    const topic = uniq("pair");
    const otherDb = createDb<WithOutbox>({
      url: tdb.url,
      schema,
      applicationName: uniq("svc-pair2"),
      max: 3,
    });
    const otherBus = new PgBus({ url: tdb.url, log, pollIntervalMs: 60_000, local: otherDb });
    closers.push(
      () => otherDb.destroy(),
      () => otherBus.close(),
    );
    const r1 = await relay(db, bus, schema, { topic, batchSize: 7 });
    const r2 = await relay(otherDb, otherBus, schema, { topic, batchSize: 7 });
    const written: DomainEvent[] = [];
    for (let round = 0; round < 5; round++) {
      const events = Array.from({ length: 30 }, (_, i) => event(`org_pair_${i % 3}`));
      written.push(...events);
      await writeCommitted(db, ...events);
      const [n1, n2] = await Promise.all([r1.drain(), r2.drain()]);
      expect(n1 + n2).toBe(30);
    }
    expect(await unsent(schema)).toBe(0);
    const ids = (await onBus(topic)).map((m) => m.event.id);
    expect(ids).toEqual(written.map((e) => e.id));
  });

  it("publishes through the bus in PRODUCER spans, with their context in the headers, while tracing is on", async () => {
    const { schema, app, db, bus } = await service("traced");
    const topic = uniq("traced");
    const exporter = new InMemorySpanExporter();
    const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    provider.register();
    const r = await relay(db, bus, schema, { topic });
    try {
      await writeCommitted(db, event("org_traced"));
      expect(await statementsOf(app, () => r.drain())).toEqual(["barrier", "begin", "mark sent", "commit"]);
      const { rows } = await admin.query<{ headers: Record<string, string> }>(
        "select headers from bus.message where topic = $1",
        [topic],
      );
      const publish = exporter.getFinishedSpans().find((s) => s.name === `publish ${topic}`);
      expect(publish).toBeDefined();
      expect(rows.map((row) => row.headers.traceparent)).toEqual([
        `00-${publish!.spanContext().traceId}-${publish!.spanContext().spanId}-01`,
      ]);
    } finally {
      await provider.shutdown();
      trace.disable();
      propagation.disable();
    }
    // Tracing off again: moved in one statement.
    await writeCommitted(db, event("org_traced"));
    expect(await statementsOf(app, () => r.drain())).toEqual(["barrier", "move to bus"]);
    expect(await onBus(topic)).toHaveLength(2);
  });
});

describe("a subscriber that joins the bus's transaction", () => {
  /** A service pool with a table the handler writes to, and a bus local to it. */
  async function consumer(label: string) {
    const s = await service(label);
    await sql`create table ${sql.table(`${s.schema}.seen`)} (value text not null)`.execute(s.db);
    return s;
  }

  async function seen(schema: string): Promise<string[]> {
    const { rows } = await admin.query<{ value: string }>(`select value from ${schema}.seen order by value`);
    return rows.map((r) => r.value);
  }

  async function position(group: string, topic: string): Promise<number> {
    const { rows } = await admin.query<{ position: string }>(
      "select position from bus.consumer_offset where group_id = $1 and topic = $2",
      [group, topic],
    );
    return Number(rows[0]?.position ?? 0);
  }

  async function lastId(topic: string): Promise<number> {
    const { rows } = await admin.query<{ id: string }>(
      "select max(id) as id from bus.message where topic = $1",
      [topic],
    );
    return Number(rows[0]!.id);
  }

  const msgs = (prefix: string, n: number): BusMessage[] =>
    Array.from({ length: n }, (_, i) => ({ key: "org_1", value: `${prefix}-${i + 1}` }));

  async function subscribe(
    bus: PgBus,
    db: Kysely<any>,
    group: string,
    topic: string,
    handler: Parameters<PgBus["subscribe"]>[0]["handler"],
  ): Promise<Subscription> {
    const sub = await bus.subscribe({ group, topic, db, handler });
    closers.push(() => sub.stop());
    return sub;
  }

  it("commits the handler's writes with the group's position: begin, read and advance, the handler's, commit", async () => {
    const { schema, app, db, bus } = await consumer("joined");
    const topic = uniq("joined");
    const calls: Array<"joined" | "apart"> = [];
    await subscribe(bus, db, "g-joined", topic, async (batch, tx) => {
      calls.push(tx ? "joined" : "apart");
      for (const m of batch) await sql`insert into seen (value) values (${m.value})`.execute(tx ?? db);
    });
    await bus.publish(topic, msgs("w", 1)); // the subscription's first passes are done once this arrives
    await eventually(async () => ((await seen(schema)).length === 1 ? true : undefined));

    const sent = await statementsOf(app, async () => {
      await bus.publish(topic, msgs("j", 3));
      await eventually(async () => ((await seen(schema)).length === 4 ? true : undefined));
      await eventually(async () =>
        (await position("g-joined", topic)) === (await lastId(topic)) ? true : undefined,
      );
    });
    // Cut after each commit; a pass woken by the warm-up may have begun before the recording (its begin missing).
    const passes = sent
      .join(",")
      .split(/(?<=commit),/)
      .map((pass) => pass.split(","))
      .map((pass) => (pass[0] === "begin" ? pass : ["begin", ...pass]));
    expect(passes.filter((p) => p.includes("insert seen"))).toEqual([
      ["begin", "read batch", "insert seen", "insert seen", "insert seen", "commit"],
    ]);
    expect(new Set(calls)).toEqual(new Set(["joined"]));
    expect(await seen(schema)).toEqual(["j-1", "j-2", "j-3", "w-1"]);
  });

  it("leaves neither the handler's writes nor the position when the connection is lost before the commit", async () => {
    const { schema, db, bus } = await consumer("crash");
    const topic = uniq("crash");
    await bus.publish(topic, msgs("c", 3));
    let crashes = 1;
    const calls: Array<"joined" | "apart"> = [];
    await subscribe(bus, db, "g-crash", topic, async (batch, tx) => {
      calls.push(tx ? "joined" : "apart");
      for (const m of batch) await sql`insert into seen (value) values (${m.value})`.execute(tx ?? db);
      if (tx && crashes > 0) {
        crashes--;
        // Written, not committed: the connection goes, as it would with the process.
        const { rows } = await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(tx);
        await admin.query("select pg_terminate_backend($1)", [rows[0]!.pid]);
        await sql`select 1`.execute(tx);
      }
    });
    await eventually(async () =>
      (await position("g-crash", topic)) === (await lastId(topic)) ? true : undefined,
    );
    await new Promise((done) => setTimeout(done, 100));
    expect(await seen(schema)).toEqual(["c-1", "c-2", "c-3"]);
    // The lost pass, then the same batch at once on the bus's own connection.
    expect(calls).toEqual(["joined", "apart"]);
  });

  it("hands a batch that failed in the transaction over again at once without it, and moves on once it is handled", async () => {
    const { schema, db, bus } = await consumer("apart");
    const topic = uniq("apart");
    await bus.publish(topic, msgs("a", 2));
    const calls: Array<"joined" | "apart"> = [];
    await subscribe(bus, db, "g-apart", topic, async (batch, tx) => {
      calls.push(tx ? "joined" : "apart");
      if (tx) {
        await sql`insert into seen (value) values ('never')`.execute(tx);
        throw new Error("refused in the transaction");
      }
      for (const m of batch) await sql`insert into seen (value) values (${m.value})`.execute(db);
    });
    await eventually(async () =>
      (await position("g-apart", topic)) === (await lastId(topic)) ? true : undefined,
    );
    expect(calls).toEqual(["joined", "apart"]);
    expect(await seen(schema)).toEqual(["a-1", "a-2"]);
  });
});
