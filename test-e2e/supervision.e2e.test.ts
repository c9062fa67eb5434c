/**
 * The stack as `npm start` runs it, supervised (tools/stack/src/supervise.ts): a service that crashes is
 * restarted with backoff and the API answers again without anyone starting it; a service stopped on purpose
 * stays stopped; a service that keeps dying is given up on, which is reported (npm start then stops the stack).
 */
import { describeSupervisionEvent, type SupervisionEvent } from "@dpp/stack";
import { startHarness, type Harness, type Tenant } from "./support/harness";

let h: Harness;
let t: Tenant;
const events: SupervisionEvent[] = [];

beforeAll(async () => {
  h = await startHarness("e2e_supervise", {
    supervise: {
      policy: { initialBackoffMs: 200, maxBackoffMs: 1000, maxRestarts: 2, windowMs: 120_000 },
      report: (e) => events.push(e),
    },
  });
  t = await h.tenant("Supervised Brand");
});
afterAll(() => h?.close());

async function until<T>(
  what: string,
  probe: () => Promise<T | undefined> | T | undefined,
  ms = 30_000,
): Promise<T> {
  for (const end = Date.now() + ms; Date.now() < end; await new Promise((r) => setTimeout(r, 100))) {
    const v = await probe();
    if (v !== undefined) return v;
  }
  throw new Error(`timed out waiting for ${what}; supervision events: ${JSON.stringify(events)}`);
}

const passports = () => `/organizations/${t.organizationId}/passports`;

it("restarts a service that crashes, logs it, and the API answers again by itself", async () => {
  const before = h.stack.services.passport.process;
  expect((await h.request(passports(), { key: t.testKey })).status).toBe(200);
  process.kill(before.pid!, "SIGKILL");
  const restarted = await until("the restart", () => events.find((e) => e.kind === "restarted"));
  expect(events[0]).toMatchObject({
    kind: "died",
    service: "passport",
    exit: "SIGKILL",
    restart: 1,
    restartInMs: 200,
  });
  expect(describeSupervisionEvent(events[0]!)).toMatch(
    /^passport exited \(SIGKILL\); restarting it in 0\.2 s/,
  );
  expect(restarted).toMatchObject({ service: "passport", pid: h.stack.services.passport.process.pid });
  expect(h.stack.services.passport.process.pid).not.toBe(before.pid);
  const status = await until("a 200", async () => {
    const res = await h.request(passports(), { key: t.testKey, body: { category: "general" } });
    return res.status === 201 ? res.status : undefined;
  });
  expect(status).toBe(201);
});

it("leaves a service stopped on purpose (the harness's killService) down", async () => {
  const count = events.length;
  await h.stack.killService("events");
  await new Promise((r) => setTimeout(r, 1000));
  expect(events).toHaveLength(count);
  expect(h.stack.services.events.process.signalCode).toBe("SIGKILL");
  await h.stack.startService("events");
  expect((await h.request(`/organizations/${t.organizationId}/events`, { key: t.testKey })).status).toBe(200);
});

it("gives up on a service that keeps dying, and says so", async () => {
  // One restart is used already; the second death is restarted, the third is one too many.
  const deathsBefore = events.filter((e) => e.kind === "died").length;
  for (let i = 0; i < 2; i++) {
    const child = h.stack.services.passport.process;
    const restarts = events.filter((e) => e.kind === "restarted").length;
    process.kill(child.pid!, "SIGKILL");
    if (i === 0)
      await until("the second restart", () =>
        events.filter((e) => e.kind === "restarted").length > restarts ? true : undefined,
      );
  }
  const gaveUp = await until("giving up", () => events.find((e) => e.kind === "gave_up"));
  expect(gaveUp).toMatchObject({ service: "passport", deaths: 3 });
  expect(describeSupervisionEvent(gaveUp)).toMatch(/giving up and stopping the stack/);
  expect(events.filter((e) => e.kind === "died").length).toBe(deathsBefore + 1);
});
