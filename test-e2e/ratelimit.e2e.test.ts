/**
 * Rate limits on Redis, and the fallback when Redis goes away (docs/decisions/0010).
 * The test starts its own redis-server on a free port (the shared one at 6379 is
 * never stopped), points the gateway at it with a per-run key prefix and small
 * limits, then kills it mid-test: the gateway keeps answering, never a 5xx, and
 * keeps limiting with its in-process counters.
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import net from "node:net";
import { envelope, startHarness, type Harness, type Tenant } from "./support/harness";

const PER_KEY = 20;
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
