/**
 * Services run as separate processes: losing one answers an enveloped 5xx fast, and the rest keeps working.
 * Losing the database for a moment answers 500 with Retry-After, and every service recovers by itself.
 */
import pg from "pg";
import { adminDatabaseUrl } from "@dpp/kit/testing";
import { loadRegistry } from "@dpp/stack";
import { envelope, startHarness, type Harness, type Tenant } from "./support/harness";

let h: Harness;
let t: Tenant;

beforeAll(async () => {
  h = await startHarness("e2e_resilience");
  t = await h.tenant("Resilient Brand");
});
afterAll(() => h?.close());

it("runs every registered service as a separate process", () => {
  expect(Object.keys(h.stack.services).sort()).toEqual(
    loadRegistry()
      .map((s) => s.name)
      .sort(),
  );
  const pids = Object.values(h.stack.services).map((s) => s.process.pid);
  expect(new Set(pids).size).toBe(loadRegistry().length);
  expect(pids).not.toContain(process.pid);
});

it("answers an enveloped 5xx within the deadline while passport is down, and recovers", async () => {
  const path = `/organizations/${t.organizationId}/passports`;
  expect((await h.request(path, { key: t.testKey })).status).toBe(200);

  await h.stack.stopService("passport");
  const started = Date.now();
  const res = await h.request(path, { key: t.testKey });
  const elapsed = Date.now() - started;
  expect(res.status).toBeGreaterThanOrEqual(500);
  const e = envelope(res);
  expect(e.code).toBe("internal_error");
  expect(e.details).toMatchObject({ service: "passport" });
  // Bounded by the gateway's gRPC deadline (5 s by default), never a hang.
  expect(elapsed).toBeLessThan(9000);
  const create = await h.request(path, { key: t.testKey, body: { category: "general" } });
  expect(create.status).toBeGreaterThanOrEqual(500);
  expect(envelope(create).code).toBe("internal_error");

  // The rest keeps working.
  expect((await h.request("/whoami", { key: t.testKey })).status).toBe(200);
  expect((await h.request(`/organizations/${t.organizationId}/events`, { key: t.testKey })).status).toBe(200);

  await h.stack.startService("passport");
  // The gateway's channel reconnects within its reconnect backoff (at most 1 s).
  let status = 0;
  const until = Date.now() + 5000;
  while (status !== 200 && Date.now() < until) {
    status = (await h.request(path, { key: t.testKey })).status;
    if (status !== 200) await new Promise((r) => setTimeout(r, 100));
  }
  expect(status).toBe(200);
  const again = await h.request(path, { key: t.testKey, body: { category: "general" } });
  expect(again.status).toBe(201);
});

it("answers 500 internal_error with Retry-After while the database is out of reach, and recovers by itself", async () => {
  const path = `/organizations/${t.organizationId}/passports`;
  expect((await h.request(path, { key: t.testKey })).status).toBe(200);
  const admin = new pg.Client({ connectionString: adminDatabaseUrl() });
  await admin.connect();
  const name = h.db.name;
  try {
    // The database goes away: no new connection is accepted and every open one is cut.
    await admin.query(`alter database ${name} with allow_connections false`);
    // For two seconds, whatever connection a service still holds (a job's session included) is cut again.
    for (let i = 0; i < 8; i++) {
      await admin.query(`select pg_terminate_backend(pid) from pg_stat_activity where datname = $1`, [name]);
      await new Promise((r) => setTimeout(r, 250));
    }
    const statuses: number[] = [];
    for (const o of [{}, { body: { category: "general" } }, {}]) {
      const res = await h.request(path, { key: t.testKey, ...o });
      statuses.push(res.status);
      const e = envelope(res);
      expect(e.code).toBe("internal_error");
      expect(res.headers.get("retry-after")).toBe("1");
      expect(res.text).not.toMatch(/allow_connections|terminat|ECONN|postgres/i);
    }
    expect(statuses).toEqual([500, 500, 500]);
  } finally {
    await admin.query(`alter database ${name} with allow_connections true`);
    await admin.end();
  }
  // Nothing is restarted: the pools reconnect on their own.
  let status = 0;
  for (const until = Date.now() + 15_000; status !== 200 && Date.now() < until;) {
    status = (await h.request(path, { key: t.testKey })).status;
    if (status !== 200) await new Promise((r) => setTimeout(r, 200));
  }
  expect(status).toBe(200);
  const created = await h.request(path, { key: t.testKey, body: { category: "general" } });
  expect(created.status).toBe(201);
  for (const s of Object.values(h.stack.services)) expect(s.process.exitCode).toBeNull();
});
