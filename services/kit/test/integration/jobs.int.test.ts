/** The leader-job runner against the real Postgres: leadership, first run, failures, stop. */
import { Writable } from "node:stream";
import pino from "pino";
import { createDb } from "../../src/db";
import { jitteredBackoffMs, startLeaderJob, withLeaderLock, type LeaderJob } from "../../src/jobs";
import { createTestDatabase, eventually, type TestDatabase } from "../../src/testing";
import type { Kysely } from "kysely";

let tdb: TestDatabase;
let db: Kysely<any>;
const jobs: LeaderJob[] = [];

/** A logger whose lines the test can read. */
function capturingLog() {
  const lines: Array<{
    level: number;
    msg: string;
    job?: string;
    failures?: number;
    started_at?: number;
    ended_at?: number;
    leader?: boolean;
  }> = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, cb) {
      for (const l of chunk.toString().split("\n")) if (l) lines.push(JSON.parse(l));
      cb();
    },
  });
  return { log: pino({ level: "debug" }, stream), lines };
}

const track = (j: LeaderJob) => {
  jobs.push(j);
  return j;
};

beforeAll(async () => {
  tdb = await createTestDatabase("kit_jobs");
  db = createDb({ url: tdb.url, schema: "public", applicationName: "jobs-test", max: 6 });
});

afterAll(async () => {
  await Promise.all(jobs.map((j) => j.stop()));
  await db?.destroy();
  await tdb?.drop();
});

describe("startLeaderJob", () => {
  it("logs each pass that ran at debug, with when it held the lock, and none that another instance held", async () => {
    const { log, lines } = capturingLog();
    const job = track(
      startLeaderJob({ name: "t:pass-log", intervalMs: 60_000, lock: db, log, run: async () => 1 }),
    );
    await eventually(async () => (lines.some((l) => l.msg === "job pass") ? true : undefined), 2000, 10);
    const pass = lines.find((l) => l.msg === "job pass")!;
    expect(pass).toMatchObject({ level: 20, job: "t:pass-log", leader: true });
    expect(pass.started_at).toBeGreaterThan(0);
    expect(pass.ended_at).toBeGreaterThanOrEqual(pass.started_at!);
    const before = lines.length;
    await withLeaderLock(db, "t:pass-log", async () => {
      expect(await job.runOnce()).toEqual({ ran: false, reason: "lock_not_held" });
      return true;
    });
    expect(lines.slice(before).filter((l) => l.msg === "job pass")).toEqual([]);
  });

  it("runs a first pass at once, then every interval", async () => {
    let passes = 0;
    const { log } = capturingLog();
    track(
      startLeaderJob({
        name: "t:first",
        intervalMs: 100,
        lock: db,
        log,
        run: async () => {
          passes++;
        },
      }),
    );
    await eventually(async () => (passes >= 1 ? true : undefined), 1000, 10);
    await eventually(async () => (passes >= 3 ? true : undefined), 2000, 20);
  });

  it("skips a pass while another instance holds the lock, and never runs two at once", async () => {
    let inside = 0;
    let maxInside = 0;
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const run = async () => {
      inside++;
      maxInside = Math.max(maxInside, inside);
      await gate;
      inside--;
      return 1;
    };
    const { log } = capturingLog();
    const a = track(startLeaderJob({ name: "t:leader", intervalMs: 60_000, lock: db, log, run }));
    await eventually(async () => (inside === 1 ? true : undefined), 2000, 10);
    // a's first pass holds the lock: another instance's pass is skipped, not queued. b runs no pass of its own
    // (its first is a minute away): a pass of b's timer after the release would hold the lock when a runs again.
    const b = track(
      startLeaderJob({ name: "t:leader", intervalMs: 60_000, firstRunDelayMs: 60_000, lock: db, log, run }),
    );
    expect(await b.runOnce()).toEqual({ ran: false, reason: "lock_not_held" });
    expect(await withLeaderLock(db, "t:leader", async () => "ran")).toBeUndefined();
    release();
    await eventually(async () => (inside === 0 ? true : undefined), 2000, 10);
    expect(maxInside).toBe(1);
    // The pass lets go of the lock just after its work returns: wait for that, then a runs again.
    await eventually(
      async () => ((await withLeaderLock(db, "t:leader", async () => "free")) ? true : undefined),
      2000,
      10,
    );
    expect(await a.runOnce()).toEqual({ ran: true, work: 1 });
  });

  it("backs off after a failure, logs the first failure at once and the recovery once", async () => {
    let calls = 0;
    const { log, lines } = capturingLog();
    const j = track(
      startLeaderJob({
        name: "t:failing",
        intervalMs: 20,
        lock: db,
        log,
        backoffMinMs: 20,
        backoffMaxMs: 80,
        repeatLogMs: 60_000,
        run: async () => {
          calls++;
          if (calls <= 4) throw new Error(`boom ${calls}`);
        },
      }),
    );
    await eventually(async () => (calls >= 5 && j.consecutiveFailures === 0 ? true : undefined), 5000, 10);
    const failed = lines.filter((l) => l.msg === "job pass failed; retrying with backoff");
    // Four failures, one line: repeats within repeatLogMs are not logged again.
    expect(failed).toHaveLength(1);
    expect(failed[0]).toMatchObject({ level: 50, job: "t:failing", failures: 1 });
    expect(lines.filter((l) => l.msg === "job recovered")).toHaveLength(1);
  });

  it("ignores wakes while backing off", async () => {
    let calls = 0;
    const { log } = capturingLog();
    const j = track(
      startLeaderJob({
        name: "t:backoff",
        intervalMs: 60_000,
        lock: db,
        log,
        backoffMinMs: 60_000,
        run: async () => {
          calls++;
          throw new Error("down");
        },
      }),
    );
    await eventually(async () => (j.consecutiveFailures === 1 ? true : undefined), 2000, 10);
    for (let i = 0; i < 20; i++) j.wake();
    await new Promise((r) => setTimeout(r, 100));
    expect(calls).toBe(1);
  });

  it("runs the pass asked for by wakes during a pass only while pending() says the pass that ran left work", async () => {
    let passes = 0;
    let release: () => void = () => undefined;
    let leftWork = false;
    const { log } = capturingLog();
    const j = track(
      startLeaderJob({
        name: "t:pending",
        intervalMs: 60_000,
        lock: false,
        log,
        pending: () => leftWork,
        run: async () => {
          passes++;
          await new Promise<void>((r) => (release = r));
        },
      }),
    );
    await eventually(async () => (passes === 1 ? true : undefined), 2000, 5);
    // Woken while the first pass runs; that pass covered the wakes: no second pass.
    j.wake();
    j.wake();
    release();
    await new Promise((r) => setTimeout(r, 50));
    expect(passes).toBe(1);
    // Woken again while idle: a pass, as always. Woken during it with work left: one more pass after it.
    j.wake();
    await eventually(async () => (passes === 2 ? true : undefined), 2000, 5);
    leftWork = true;
    j.wake();
    release();
    await eventually(async () => (passes === 3 ? true : undefined), 2000, 5);
    release();
  });

  it("stop waits for the running pass and no pass starts afterwards", async () => {
    let finished = false;
    let started = 0;
    const { log } = capturingLog();
    const j = startLeaderJob({
      name: "t:stop",
      intervalMs: 10,
      lock: db,
      log,
      run: async () => {
        started++;
        await new Promise((r) => setTimeout(r, 150));
        finished = true;
      },
    });
    await eventually(async () => (started === 1 ? true : undefined), 2000, 5);
    await j.stop();
    expect(finished).toBe(true);
    const after = started;
    await new Promise((r) => setTimeout(r, 60));
    expect(started).toBe(after);
    expect(await j.runOnce()).toEqual({ ran: false, reason: "stopped" });
  });
});

describe("jitteredBackoffMs", () => {
  it("stays between half and all of the doubled delay, capped", () => {
    expect(jitteredBackoffMs(1, 500, 30_000, () => 0)).toBe(250);
    expect(jitteredBackoffMs(1, 500, 30_000, () => 1)).toBe(500);
    expect(jitteredBackoffMs(3, 500, 30_000, () => 1)).toBe(2000);
    expect(jitteredBackoffMs(40, 500, 30_000, () => 0.5)).toBe(22_500);
  });
});
