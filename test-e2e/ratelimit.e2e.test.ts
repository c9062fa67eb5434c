/**
 * Rate limits on Redis, and the fallback when Redis goes away (docs/decisions/0010).
 * The test starts its own redis-server on a free port (the shared one at 6379 is
 * never stopped), points the gateway at it with a per-run key prefix and small
 * limits, then kills it mid-test: the gateway keeps answering, never a 5xx, and
 * keeps limiting with its in-process counters. Refusals are limited too (docs/decisions/0019): a key's refused
 * requests count against it, and failed authentications are limited per client address, without locking a valid
 * key from that address out (docs/decisions/0045).
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import net from "node:net";
import { envelope, startHarness, type Harness, type Tenant } from "./support/harness";

const PER_KEY = 20;
const AUTH_FAILURES = 10;
let h: Harness;
let t: Tenant;
let redis: ChildProcess | undefined;
let redisPort = 0;
const prefix = `dpp:rl:e2e:${process.pid}:${Date.now()}`;

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

const cli = (...args: string[]) =>
  spawnSync("redis-cli", ["-p", String(redisPort), ...args], { encoding: "utf8" }).stdout.trim();

beforeAll(async () => {
  redisPort = await freePort();
  redis = spawn(
    "redis-server",
    ["--port", String(redisPort), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
    {
      stdio: "ignore",
    },
  );
  for (let i = 0; i < 100 && cli("ping") !== "PONG"; i++) await new Promise((r) => setTimeout(r, 50));
  process.env.REDIS_URL = `redis://127.0.0.1:${redisPort}`;
  process.env.RATE_LIMIT_KEY_PREFIX = prefix;
  process.env.RATE_LIMIT_PER_KEY_PER_MINUTE = String(PER_KEY);
  process.env.RATE_LIMIT_ANONYMOUS_PER_MINUTE = "60";
  process.env.RATE_LIMIT_AUTH_FAILURES_PER_MINUTE = String(AUTH_FAILURES);
  h = await startHarness("e2e_ratelimit");
  t = await h.tenant("Limited");
});
afterAll(async () => {
  redis?.kill("SIGKILL");
  await h?.close();
});

it("limits anonymous callers to 60 per minute per address on the category endpoints, counted in Redis", async () => {
  for (let i = 0; i < 60; i++) {
    const res = await h.request(i % 2 ? "/categories" : "/categories/textile/schema");
    expect(res.status).toBe(200);
    expect(res.headers.get("ratelimit-policy")).toBe('"anonymous";q=60;w=60');
    expect(res.headers.get("ratelimit")).toMatch(new RegExp(`^"anonymous";r=${59 - i};t=\\d+$`));
  }
  const res = await h.request("/categories");
  expect(res.status).toBe(429);
  expect(envelope(res)).toMatchObject({ code: "rate_limited", details: { limit: 60, window_seconds: 60 } });
  expect(Number(res.headers.get("retry-after"))).toBeGreaterThan(0);
  expect(res.headers.get("ratelimit")).toMatch(/^"anonymous";r=0;t=\d+$/);
  // The counter lives in Redis under this run's prefix.
  expect(cli("--scan", "--pattern", `${prefix}:anonymous:*`)).not.toBe("");
  // A key is counted on its own, not against the address.
  expect((await h.request("/categories", { key: t.testKey })).status).toBe(200);
});

it("limits each key, whatever organization or mode it calls, and says so in the headers", async () => {
  const k = await h.admin.createKey({ organizationId: t.organizationId, livemode: false });
  for (let i = 0; i < PER_KEY; i++) {
    const res = await h.request(i % 2 ? "/whoami" : `/organizations/${t.organizationId}/passports`, {
      key: k.key,
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("ratelimit-policy")).toBe(`"per-key";q=${PER_KEY};w=60`);
  }
  const res = await h.request("/whoami", { key: k.key });
  expect(res.status).toBe(429);
  expect(envelope(res).code).toBe("rate_limited");
  expect(res.headers.get("retry-after")).toMatch(/^\d+$/);
  // Another key is not affected.
  expect((await h.request("/whoami", { key: t.liveKey })).status).toBe(200);
  expect(cli("--scan", "--pattern", `${prefix}:key:*`)).not.toBe("");
});

it("keeps answering with in-process limits when Redis stops mid-test (never a 5xx)", async () => {
  const k = await h.admin.createKey({ organizationId: t.organizationId, livemode: false });
  expect((await h.request("/whoami", { key: k.key })).status).toBe(200);
  redis!.kill("SIGKILL");
  await new Promise((r) => redis!.once("exit", r));
  expect(cli("ping")).not.toBe("PONG");

  const statuses: number[] = [];
  for (let i = 0; i < PER_KEY + 5; i++) {
    const res = await h.request(i % 2 ? "/whoami" : `/organizations/${t.organizationId}/passports`, {
      key: k.key,
    });
    statuses.push(res.status);
    if (res.status === 429) expect(envelope(res).code).toBe("rate_limited");
  }
  expect(statuses.filter((s) => s >= 500)).toEqual([]);
  expect(statuses.slice(0, PER_KEY - 1).every((s) => s === 200)).toBe(true);
  // The in-process counter took over: the key is limited again within the window.
  expect(statuses.slice(-3)).toEqual([429, 429, 429]);
  // Anonymous callers are served and limited too.
  const anon = await h.request("/categories");
  expect([200, 429]).toContain(anon.status);
  expect(anon.status).toBeLessThan(500);
});

it("counts a key's refused requests against its limit: 403 and 404 until the limit, then 429", async () => {
  const k = await h.admin.createKey({
    organizationId: t.organizationId,
    livemode: false,
    scopes: ["passports:read"],
  });
  const stranger = await h.tenant("Stranger");
  const statuses: number[] = [];
  for (let i = 0; i < PER_KEY + 2; i++) {
    const res =
      i % 2
        ? await h.request(`/organizations/${t.organizationId}/passports`, {
            key: k.key,
            body: { category: "general" },
          })
        : await h.request(`/organizations/${stranger.organizationId}/passports`, { key: k.key });
    statuses.push(res.status);
    if (res.status === 429) {
      expect(envelope(res).details).toMatchObject({ policy: "per-key", limit: PER_KEY });
      expect(res.headers.get("retry-after")).toMatch(/^\d+$/);
    }
  }
  expect(statuses.slice(0, PER_KEY).every((s) => s === 403 || s === 404)).toBe(true);
  expect(statuses.slice(PER_KEY)).toEqual([429, 429]);
});

it("limits failed authentications per client address: past the budget a bad key is 429, a valid key is still served", async () => {
  const random = () => `dpp_sk_test_${"B".repeat(32)}${String(Math.random()).slice(2, 8).padEnd(6, "0")}`;
  for (let i = 0; i < AUTH_FAILURES; i++) {
    const res = await h.request("/whoami", { key: i % 2 ? random() : "not-a-key" });
    expect(res.status).toBe(401);
    expect(envelope(res).code).toBe("invalid_key");
  }
  for (const key of [random(), "not-a-key"]) {
    const res = await h.request("/whoami", { key });
    expect(res.status).toBe(429);
    expect(envelope(res)).toMatchObject({
      code: "rate_limited",
      details: { policy: "auth-failures", limit: AUTH_FAILURES, window_seconds: 60 },
    });
    expect(Number(res.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(res.headers.get("ratelimit-policy")).toBe(`"auth-failures";q=${AUTH_FAILURES};w=60`);
  }
  // The same address, a valid key: served, and counted against that key only.
  const valid = await h.request("/whoami", { key: t.testKey });
  expect(valid.status).toBe(200);
  expect(valid.headers.get("ratelimit-policy")).toBe(`"per-key";q=${PER_KEY};w=60`);
  expect((await h.request(`/organizations/${t.organizationId}/passports`, { key: t.testKey })).status).toBe(
    200,
  );
  // Anonymous category requests from the address are not authentications: still served.
  expect((await h.request("/categories")).status).toBeLessThan(500);
});
