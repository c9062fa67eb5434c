/**
 * Supervision of the local stack (npm start) on real processes and real worker threads (hosting.ts): a service
 * that dies is started again after a doubling backoff, each death and restart is reported, a service that keeps
 * dying is given up on, and a service stopped on purpose stays stopped.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { launch, type Hosting, type Unit } from "../src/hosting";
import {
  describeSupervisionEvent,
  Supervisor,
  type SupervisionEvent,
  type SupervisionPolicy,
} from "../src/supervise";

const policy: SupervisionPolicy = {
  initialBackoffMs: 50,
  maxBackoffMs: 120,
  maxRestarts: 3,
  windowMs: 60_000,
};
const units: Unit[] = [];

/** A service that idles until it is stopped (SIGTERM, or the shutdown message in a thread) or killed. */
const IDLE = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "dpp-supervise-")), "idle.js");
fs.writeFileSync(
  IDLE,
  `const { isMainThread, parentPort } = require("node:worker_threads");
setInterval(() => {}, 1000);
process.on("SIGTERM", () => process.exit(0));
if (!isMainThread) parentPort.on("message", (m) => m && m.type === "dpp.shutdown" && process.exit(0));
`,
);

afterAll(async () => {
  await Promise.all(units.map((u) => u.kill("SIGKILL")));
  fs.rmSync(path.dirname(IDLE), { recursive: true, force: true });
});

/** Resolves with the next event the predicate accepts. */
function nextEvent(
  events: SupervisionEvent[],
  accept: (e: SupervisionEvent) => boolean,
  seen = events.length,
) {
  return new Promise<SupervisionEvent>((resolve, reject) => {
    const until = Date.now() + 10_000;
    const poll = () => {
      const found = events.slice(seen).find(accept);
      if (found) return resolve(found);
      if (Date.now() > until) return reject(new Error(`no such event; got ${JSON.stringify(events)}`));
      setTimeout(poll, 10);
    };
    poll();
  });
}

describe.each<[Hosting, string]>([
  ["process", "SIGKILL"],
  ["threads", "terminated"],
])("%s hosting", (hosting, killed) => {
  function live(): Unit {
    const unit = launch(hosting, { name: "passport", bundle: IDLE, args: [], env: {} });
    units.push(unit);
    return unit;
  }

  it("restarts a service that dies, with a doubling backoff, and gives up after maxRestarts within the window", async () => {
    const events: SupervisionEvent[] = [];
    let current = live();
    const starts: number[] = [];
    const sup = new Supervisor(
      policy,
      async () => {
        starts.push(Date.now());
        current = live();
        return current;
      },
      (e) => events.push(e),
    );
    sup.watch("passport", current);
    const ids = [current.id];
    for (const [i, delay] of [50, 100, 120].entries()) {
      const seen = events.length;
      const killedAt = Date.now();
      void current.kill("SIGKILL");
      const died = await nextEvent(events, (e) => e.kind === "died", seen);
      expect(died).toEqual({
        kind: "died",
        service: "passport",
        exit: killed,
        restartInMs: delay,
        restart: i + 1,
        policy,
      });
      const restarted = await nextEvent(events, (e) => e.kind === "restarted", seen);
      expect(starts[i]! - killedAt).toBeGreaterThanOrEqual(delay - 5);
      expect(restarted).toEqual({
        kind: "restarted",
        service: "passport",
        pid: current.pid,
        ...(hosting === "threads" ? { threadId: current.threadId } : {}),
      });
      ids.push(current.id);
    }
    expect(new Set(ids).size).toBe(4);
    const seen = events.length;
    void current.kill("SIGKILL");
    const gaveUp = await nextEvent(events, (e) => e.kind === "gave_up", seen);
    expect(gaveUp).toMatchObject({ service: "passport", exit: killed, deaths: 4 });
    expect(describeSupervisionEvent(gaveUp)).toMatch(
      new RegExp(`passport exited \\(${killed}\\) for the 4th time .* stopping the stack`),
    );
    await new Promise((r) => setTimeout(r, 300));
    expect(starts).toHaveLength(3);
  });

  it("does not restart a service stopped on purpose, and forgets deaths older than the window", async () => {
    const events: SupervisionEvent[] = [];
    let clock = 0;
    let current = live();
    const sup = new Supervisor(
      { ...policy, maxRestarts: 1, windowMs: 1000 },
      async () => (current = live()),
      (e) => events.push(e),
      () => clock,
    );
    sup.watch("events", current);
    void current.kill("SIGKILL");
    await nextEvent(events, (e) => e.kind === "restarted");
    // The next death comes after the window: it is restart 1 again, not a reason to give up.
    clock += 5000;
    void current.kill("SIGKILL");
    expect(await nextEvent(events, (e) => e.kind === "died", 2)).toMatchObject({ restart: 1 });
    await nextEvent(events, (e) => e.kind === "restarted", 2);

    const count = events.length;
    sup.pause("events");
    void current.kill("SIGTERM");
    await new Promise((r) => setTimeout(r, 300));
    expect(events).toHaveLength(count);
    sup.stop();
  });

  it("counts a restart that fails as another death and tries again", async () => {
    const events: SupervisionEvent[] = [];
    let attempts = 0;
    const first = live();
    const sup = new Supervisor(
      policy,
      async () => {
        attempts++;
        if (attempts === 1) throw new Error("passport exited (code 1) while starting");
        return live();
      },
      (e) => events.push(e),
    );
    sup.watch("passport", first);
    void first.kill("SIGKILL");
    await nextEvent(events, (e) => e.kind === "restarted");
    expect(events.map((e) => e.kind)).toEqual(["died", "died", "restarted"]);
    expect(events[1]).toMatchObject({
      exit: "passport exited (code 1) while starting",
      restart: 2,
      restartInMs: 100,
    });
    sup.stop();
  });
});
