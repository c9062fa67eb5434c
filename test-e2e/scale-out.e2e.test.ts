/**
 * The stack with two replicas of every service (StackOptions.replicas; README, "Replicas"), supervised as
 * `npm start` runs it:
 *
 * - calls spread: the gateway's calls to passport reach both passport replicas, each at least a third of a
 *   burst (each replica's own log counts the calls it served: the kit logs one debug line per call);
 * - SIGKILL of one passport replica and one gateway replica under keyed creates: every create answered 2xx is
 *   readable afterwards, once; a 5xx or a broken connection is retried by the client with the same
 *   Idempotency-Key, and a 5xx only comes within RETRY_WINDOW_MS of a kill (the time the callers take to see
 *   the replica gone); the supervisor restarts both replicas by itself;
 * - the outbox relays and the events consumers of both replicas never double nor reorder an event: the
 *   public feed holds each created passport's passport.created once, in commit order (the outbox's `ord`), on
 *   the Postgres-table bus, and on Kafka (librdkafka's mock cluster, tools/kafka-mock/mock_cluster.py, with a
 *   replica of passport and one of events killed while passports are created);
 * - every leader job runs on one replica at a time: each replica logs its job passes with when they held the
 *   job's lock (JOB_LOG_LEVEL=debug), and no two passes of one job overlap;
 * - SIGTERM of a replica under load drains it: nothing lost, no 5xx.
 *
 * Each check prints one line.
 */
import fs from "node:fs";
import path from "node:path";
import pg from "pg";
import { SERVICE_NODE_ARGS, type SupervisionEvent } from "@dpp/stack";
import { startKafkaMock, type KafkaMock } from "../packages/bus/test/support/kafka-mock";
import { startHarness, type Harness, type Tenant } from "./support/harness";

/**
 * The retry window of a kill: from the kill until RETRY_WINDOW_MS after the supervisor restarted the replica
 * (or after the kill, when it was not restarted yet), a 5xx may be answered (and is retried under the same
 * key): calls in flight on the killed replica, and calls that overran their deadline while the restarted
 * replica warms up on a loaded machine.
 */
const RETRY_WINDOW_MS = 10_000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let h: Harness;
let t: Tenant;
const events: SupervisionEvent[] = [];
/** When each supervision event came. */
const eventAt = new Map<SupervisionEvent, number>();

/** The stack's supervision: each replica that dies is restarted by itself. */
const supervise = {
  policy: { initialBackoffMs: 300, maxBackoffMs: 1000, maxRestarts: 10, windowMs: 600_000 },
  report: (e: SupervisionEvent) => {
    events.push(e);
    eventAt.set(e, Date.now());
  },
};
/** Every replica logs its job passes; the load's creates and reads go through one key, whose limit is raised. */
const ENV = { JOB_LOG_LEVEL: "debug", RATE_LIMIT_PER_KEY_PER_MINUTE: "100000" };

const passports = () => `/organizations/${t.organizationId}/passports`;

/** The lines of a replica's log (JSON, one object a line), from byte `from` on. */
function logLines(id: string, from = 0): Record<string, any>[] {
  const text = fs
    .readFileSync(path.join(h.logDir, `${id}.log`))
    .subarray(from)
    .toString("utf8");
  const out: Record<string, any>[] = [];
  for (const line of text.split("\n")) {
    if (!line.startsWith("{")) continue;
    try {
      out.push(JSON.parse(line) as Record<string, any>);
    } catch {
      // A line cut by a kill.
    }
  }
  return out;
}
const logSize = (id: string) => fs.statSync(path.join(h.logDir, `${id}.log`)).size;

/** What keyed creates saw: the ids answered 2xx, and every retry and 5xx (with when it came). */
interface Load {
  created: Map<string, string>; // external_id → passport id
  retried: number;
  /** Requests whose connection broke before an answer (a replica killed or closing its connections). */
  broken: number;
  fiveXx: number[];
  stop: () => void;
  done: Promise<void>;
}

/**
 * `writers` clients creating passports one after the other until stopped, each create under its own
 * Idempotency-Key, retried with the same key on a 5xx, a 429 or a broken connection until it is answered.
 */
function keyedCreates(prefix: string, writers: number): Load {
  const load: Load = {
    created: new Map(),
    retried: 0,
    broken: 0,
    fiveXx: [],
    stop: () => undefined,
    done: Promise.resolve(),
  };
  let running = true;
  load.stop = () => (running = false);
  const one = async (externalId: string) => {
    const key = `${prefix}-${externalId}`;
    for (let attempt = 0; attempt < 200; attempt++) {
      if (attempt > 0) load.retried++;
      const res = await h
        .request(passports(), {
          key: t.testKey,
          body: { category: "general", external_id: externalId },
          headers: { "idempotency-key": key },
        })
        // fetch fails with "fetch failed" (a TypeError of Node's realm) when the connection breaks; anything
        // else (the contract check) fails the test.
        .catch((err: unknown) => {
          if ((err as Error)?.message === "fetch failed") return undefined;
          throw err;
        });
      if (!res) load.broken++;
      if (res && res.status >= 200 && res.status < 300) {
        load.created.set(externalId, res.body.id as string);
        return;
      }
      if (res && res.status >= 500) load.fiveXx.push(Date.now());
      else if (res && res.status !== 429) throw new Error(`create ${externalId}: ${res.status} ${res.text}`);
      await sleep(100);
    }
    throw new Error(`create ${externalId} never answered`);
  };
  load.done = Promise.all(
    [...Array(writers).keys()].map(async (w) => {
      for (let i = 0; running; i++) await one(`${prefix}-${w}-${i}`);
    }),
  ).then(() => undefined);
  return load;
}

/** The 5xx answers of the load that came later than RETRY_WINDOW_MS after every kill (or before them all). */
function outsideRetryWindow(load: Load, kills: number[]): number[] {
  const restarts = events.filter((e) => e.kind === "restarted").map((e) => eventAt.get(e)!);
  const windowEnd = (k: number) => (restarts.find((r) => r >= k) ?? k) + RETRY_WINDOW_MS;
  return load.fiveXx.filter((at) => !kills.some((k) => at >= k && at <= windowEnd(k)));
}

/** Waits until `n` passports of the load were created. */
async function untilCreated(load: Load, n: number) {
  for (const end = Date.now() + 60_000; load.created.size < n; await sleep(50))
    if (Date.now() > end) throw new Error(`only ${load.created.size} of ${n} creates answered`);
}

async function until<T>(what: string, probe: () => T | undefined, ms = 60_000): Promise<T> {
  for (const end = Date.now() + ms; Date.now() < end; await sleep(100)) {
    const v = probe();
    if (v !== undefined) return v;
  }
  throw new Error(`timed out waiting for ${what}; supervision events: ${JSON.stringify(events)}`);
}

/** Every created passport is readable, and exists once (one row per external_id). */
async function expectAllReadable(load: Load) {
  for (const id of load.created.values()) {
    const res = await h.request(`${passports()}/${id}`, { key: t.testKey });
    h.expectStatus(res, 200);
  }
  const db = new pg.Client({ connectionString: h.db.url });
  await db.connect();
  try {
    const { rows } = await db.query<{ external_id: string; n: number }>(
      "select external_id, count(*)::int as n from passport.passport where organization_id = $1 and external_id = any($2) group by external_id",
      [t.organizationId, [...load.created.keys()]],
    );
    expect(rows).toHaveLength(load.created.size);
    expect(rows.every((r) => r.n === 1)).toBe(true);
  } finally {
    await db.end();
  }
}

interface FeedEvent {
  id: string;
  type: string;
  related: { id: string };
}

async function readFeed(): Promise<FeedEvent[]> {
  const all: FeedEvent[] = [];
  let cursor = "";
  for (;;) {
    const res = await h.request(
      `/organizations/${t.organizationId}/events?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`,
      { key: t.testKey },
    );
    if (res.status !== 200) throw new Error(`feed answered ${res.status}`);
    all.push(...(res.body.data as FeedEvent[]));
    cursor = res.body.next_cursor;
    if (!res.body.has_more) return all;
  }
}

/**
 * The organization's feed holds one passport.created per passport it created (every create of `load`
 * among them), nothing doubled, in commit order (the outbox's `ord`), once it caught up within `catchUpMs`.
 */
async function expectFeedOnceInOrder(bus: string, load: Load, catchUpMs: number) {
  const db = new pg.Client({ connectionString: h.db.url });
  await db.connect();
  try {
    const { rows } = await db.query<{ pid: string }>(
      `select payload->'related'->>'id' as pid from passport.outbox
       where organization_id = $1 and livemode = false and type = 'passport.created' order by ord`,
      [t.organizationId],
    );
    const expected = rows.map((r) => r.pid);
    for (const id of load.created.values()) expect(expected).toContain(id);
    let feed: FeedEvent[] = [];
    for (const end = Date.now() + catchUpMs; Date.now() < end; await sleep(250)) {
      feed = (await readFeed().catch(() => [])).filter((e) => e.type === "passport.created");
      if (feed.length >= expected.length) break;
    }
    const related = feed.map((e) => e.related.id);
    console.log(
      `feed on ${bus}: ${expected.length} passports created, ${related.length} passport.created events, ${related.length - new Set(related).size} doubled`,
    );
    expect(new Set(feed.map((e) => e.id)).size).toBe(feed.length);
    expect(related).toEqual(expected);
  } finally {
    await db.end();
  }
}

describe("on the Postgres-table bus", () => {
  beforeAll(async () => {
    events.length = 0;
    h = await startHarness("e2e_scale", {
      replicas: 2,
      // Each passport replica logs the calls it serves (one debug line each). A gateway replica told to stop
      // answers for a second more with readiness off, each answer closing its connection, before it closes.
      serviceEnv: { passport: { LOG_LEVEL: "debug" }, gateway: { SHUTDOWN_DRAIN_DELAY_MS: "1000" } },
      env: ENV,
      supervise,
    });
    t = await h.tenant("Scale Brand");
  }, 180_000);
  afterAll(() => h?.close(), 60_000);

  it("runs two replicas of every service, the gateway's behind one port", () => {
    for (const s of Object.values(h.stack.services)) {
      expect(s.replicas).toHaveLength(2);
      expect(new Set(s.replicas.map((r) => r.process.pid)).size).toBe(2);
      if (s.name !== "gateway") expect(s.address).toBe(`ipv4:${s.replicas.map((r) => r.address).join(",")}`);
    }
    expect(h.stack.balanced.gateway).toHaveLength(2);
    expect(h.stack.balanced.public).toHaveLength(2);
  });

  it("spreads the calls to passport over both replicas", async () => {
    const created = await h.request(passports(), { key: t.testKey, body: { category: "general" } });
    h.expectStatus(created, 201);
    const ids = ["passport-1", "passport-2"];
    const from = ids.map(logSize);
    const BURST = 60;
    for (let i = 0; i < BURST; i += 6)
      await Promise.all(
        [...Array(6).keys()].map(async () =>
          h.expectStatus(await h.request(`${passports()}/${created.body.id}`, { key: t.testKey }), 200),
        ),
      );
    const served = ids.map((id, i) => logLines(id, from[i]).filter((l) => l.msg === "call").length);
    const total = served[0]! + served[1]!;
    console.log(
      `calls spread: ${BURST} reads, passport-1 served ${served[0]}, passport-2 served ${served[1]} calls`,
    );
    expect(total).toBeGreaterThanOrEqual(BURST);
    for (const n of served) expect(n).toBeGreaterThanOrEqual(total / 3);
  });

  let killLoad: Load;

  it("loses no accepted write when a passport replica and a gateway replica are killed under keyed creates", async () => {
    const load = keyedCreates("kill", 4);
    killLoad = load;
    const kills: number[] = [];
    try {
      await untilCreated(load, 20);
      const passport1 = h.stack.services.passport.replicas[0]!.process.pid!;
      kills.push(Date.now());
      process.kill(passport1, "SIGKILL");
      await untilCreated(load, load.created.size + 20);
      const gateway1 = h.stack.services.gateway.replicas[0]!.process.pid!;
      kills.push(Date.now());
      process.kill(gateway1, "SIGKILL");
      await untilCreated(load, load.created.size + 20);
      // The supervisor brings both back by itself.
      await until("both replicas restarted", () =>
        ["passport-1", "gateway-1"].every((id) =>
          events.some((e) => e.kind === "restarted" && e.service === id),
        )
          ? true
          : undefined,
      );
      await untilCreated(load, load.created.size + 20);
    } finally {
      load.stop();
      await load.done;
    }
    await expectAllReadable(load);
    const outside = outsideRetryWindow(load, kills);
    console.log(
      `SIGKILL of passport-1 and gateway-1 under ${load.created.size} keyed creates: retried ${load.retried} (${load.broken} broken connections), 5xx ${load.fiveXx.length}, writes lost 0`,
    );
    expect(outside).toEqual([]);
    expect(h.stack.services.passport.replicas[0]!.process.pid).not.toBe(undefined);
  }, 180_000);

  it("holds every created passport's event once and in commit order in the feed (Postgres-table bus)", async () => {
    await expectFeedOnceInOrder("the Postgres-table bus", killLoad, 60_000);
  }, 120_000);

  it("runs each leader job's pass on one replica at a time", () => {
    const passes: { job: string; replica: string; from: number; to: number }[] = [];
    for (const s of Object.values(h.stack.services))
      for (const r of s.replicas)
        for (const l of logLines(r.id))
          if (l.msg === "job pass" && l.leader)
            passes.push({ job: l.job, replica: l.replica, from: l.started_at, to: l.ended_at });
    const jobs = new Map<string, typeof passes>();
    for (const p of passes) jobs.set(p.job, [...(jobs.get(p.job) ?? []), p]);
    let overlaps = 0;
    let onBoth = 0;
    for (const list of jobs.values()) {
      list.sort((a, b) => a.from - b.from);
      for (let i = 1; i < list.length; i++) if (list[i]!.from < list[i - 1]!.to) overlaps++;
      if (new Set(list.map((p) => p.replica)).size > 1) onBoth++;
    }
    console.log(
      `leader jobs: ${passes.length} passes of ${jobs.size} jobs, ${onBoth} jobs ran on both replicas (one at a time), overlapping passes ${overlaps}`,
    );
    expect(jobs.size).toBeGreaterThan(0);
    expect(overlaps).toBe(0);
  });

  it("drains a replica stopped with SIGTERM under load: nothing lost, no 5xx", async () => {
    const load = keyedCreates("term", 4);
    try {
      await untilCreated(load, 20);
      await Promise.all([h.stack.stopReplica("passport", 1), h.stack.stopReplica("gateway", 1)]);
      expect(h.stack.services.passport.replicas[1]!.unit.exit).toBe("code 0");
      await untilCreated(load, load.created.size + 20);
      await Promise.all([h.stack.startReplica("passport", 1), h.stack.startReplica("gateway", 1)]);
      await untilCreated(load, load.created.size + 20);
    } finally {
      load.stop();
      await load.done;
    }
    await expectAllReadable(load);
    console.log(
      `SIGTERM of passport-2 and gateway-2 under ${load.created.size} keyed creates: retried ${load.retried} (${load.broken} broken connections), 5xx ${load.fiveXx.length}, writes lost 0`,
    );
    expect(load.fiveXx).toEqual([]);
  }, 120_000);
});

describe("on Kafka (librdkafka's mock cluster)", () => {
  let mock: KafkaMock;
  const TOPIC = "e2e-scale.domain-events";
  beforeAll(async () => {
    events.length = 0;
    mock = await startKafkaMock();
    // The mock answers no topic creation through the admin API: the topic is made here, and the services
    // find it (KAFKA_TOPIC_CREATE=false); their producers are plain ones (support/kafka-mock-preload.cjs).
    await mock.control(`create-topic ${TOPIC} 6`);
    h = await startHarness("e2e_scale_kafka", {
      replicas: 2,
      env: {
        ...ENV,
        KAFKA_BROKERS: mock.brokers,
        KAFKA_TOPIC: TOPIC,
        KAFKA_CONSUMER_GROUP: "e2e-scale-events",
        KAFKA_TOPIC_CREATE: "false",
        KAFKA_SESSION_TIMEOUT_MS: "6000",
      },
      nodeArgs: [
        ...SERVICE_NODE_ARGS,
        "--require",
        path.join(__dirname, "support", "kafka-mock-preload.cjs"),
      ],
      supervise,
    });
    t = await h.tenant("Scale Kafka Brand");
  }, 180_000);
  afterAll(async () => {
    await h?.close();
    await mock?.stop();
  }, 60_000);

  it("holds every created passport's event once and in commit order while a relay and a consumer replica are killed", async () => {
    const load = keyedCreates("kafka", 4);
    const kills: number[] = [];
    try {
      await untilCreated(load, 20);
      kills.push(Date.now());
      process.kill(h.stack.services.passport.replicas[0]!.process.pid!, "SIGKILL");
      await untilCreated(load, load.created.size + 20);
      kills.push(Date.now());
      process.kill(h.stack.services.events.replicas[1]!.process.pid!, "SIGKILL");
      await untilCreated(load, load.created.size + 20);
      await until("both replicas restarted", () =>
        ["passport-1", "events-2"].every((id) =>
          events.some((e) => e.kind === "restarted" && e.service === id),
        )
          ? true
          : undefined,
      );
      await untilCreated(load, load.created.size + 20);
    } finally {
      load.stop();
      await load.done;
    }
    await expectAllReadable(load);
    console.log(
      `Kafka: SIGKILL of passport-1 and events-2 under ${load.created.size} keyed creates: retried ${load.retried} (${load.broken} broken connections), 5xx ${load.fiveXx.length}, writes lost 0`,
    );
    expect(outsideRetryWindow(load, kills)).toEqual([]);
    // A consumer's partitions wait for its session to time out (6 s) and the group to rebalance.
    await expectFeedOnceInOrder("Kafka", load, 120_000);
  }, 300_000);
});
