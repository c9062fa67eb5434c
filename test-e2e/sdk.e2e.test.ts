/**
 * The SDK (@dpp/client) against the whole stack: the spec's retry rules with real refusals, the
 * event feed read by its iterator, refusals as typed errors (docs/decisions/0017).
 */
import { spawnSync } from "node:child_process";
import { Client } from "pg";
import { isDppError, type DppError, type Event, type RetryEvent } from "@dpp/client";
import { startHarness, type ApiResponse, type Harness, type Tenant } from "./support/harness";

const prefix = `dpp:rl:e2e-sdk:${process.pid}:${Date.now()}`;
let h: Harness;
let t: Tenant;

beforeAll(async () => {
  // Rate limits counted in the shared Redis under this run's prefix, so that a test can fill a
  // key's window (the limits themselves are the defaults).
  process.env.REDIS_URL = "redis://127.0.0.1:6379";
  process.env.RATE_LIMIT_KEY_PREFIX = prefix;
  h = await startHarness("e2e_sdk");
  t = await h.tenant("SDK Brand");
}, 120_000);
afterAll(() => h?.close());

const redis = (...args: string[]) =>
  spawnSync("redis-cli", ["-p", "6379", ...args], { encoding: "utf8" }).stdout.trim();

async function feedUntil(org: string, key: string, done: (events: Event[]) => boolean): Promise<Event[]> {
  const until = Date.now() + 15_000;
  for (;;) {
    const events = await h.sdk(key).organization(org).events.list({ limit: 100 }).toArray();
    if (done(events) || Date.now() > until) return events;
    await new Promise((r) => setTimeout(r, 100));
  }
}

it("retries a create through 429 rate_limited and 409 resource_busy under one key, and one passport is stored", async () => {
  const sdkKey = await h.admin.createKey({ organizationId: t.organizationId, livemode: false });
  const body = {
    category: "textile" as const,
    external_id: `sdk-retried-${Date.now()}`,
    data: { product_name: "Retried shirt" },
  };
  // Hold every passport insert of this stack's database: a create that claimed its key stays in flight.
  const pg = new Client({ connectionString: h.db.url });
  await pg.connect();
  await pg.query("BEGIN");
  await pg.query("LOCK TABLE passport.passport IN EXCLUSIVE MODE");
  // The SDK's key has used up its window for the next second and a half.
  expect(redis("SET", `${prefix}:key:${sdkKey.record.id}`, "1000000", "PX", "1500")).toBe("OK");

  const retries: RetryEvent[] = [];
  let inFlight: Promise<ApiResponse> | undefined;
  const sdk = h.sdk(sdkKey.key, {
    maxRetries: 5,
    onRetry: (e) => {
      retries.push(e);
      // While the SDK waits out the 429, another request under the same key starts and blocks.
      if (e.reason === "rate_limited")
        inFlight = h.request(`/organizations/${t.organizationId}/passports`, {
          key: t.testKey,
          body,
          headers: { "idempotency-key": e.idempotencyKey! },
        });
      // Once the SDK was told the key is busy, let that request finish.
      if (e.reason === "resource_busy" && retries.filter((r) => r.reason === "resource_busy").length === 1)
        setTimeout(() => void pg.query("COMMIT"), 300);
    },
  });
  try {
    const created = await sdk.organization(t.organizationId).passports.create(body);
    const other = await inFlight!;

    expect(retries.map((r) => [r.reason, r.status])).toEqual([
      ["rate_limited", 429],
      ["resource_busy", 409],
    ]);
    const key = retries[0]!.idempotencyKey;
    expect(key).toMatch(/^dpp-client-/);
    expect(retries.every((r) => r.idempotencyKey === key && !r.newIdempotencyKey)).toBe(true);
    expect(created.lastResponse).toMatchObject({
      status: 201,
      attempts: 3,
      idempotencyKey: key,
      replayed: true,
    });
    expect(other.status).toBe(201);
    expect(created.id).toBe(other.body.id);
    expect(created.data.product_name).toBe("Retried shirt");
  } finally {
    await pg.query("ROLLBACK").catch(() => undefined);
    await pg.end();
  }
  const stored = await h
    .sdk(t.testKey)
    .organization(t.organizationId)
    .passports.list({ limit: 100 })
    .toArray();
  expect(stored.filter((p) => p.external_id === body.external_id)).toHaveLength(1);
});

it("reads the event feed to its end with the iterator, then reads on from its cursor", async () => {
  const org = h.sdk(t.testKey).organization(t.organizationId);
  const ids: string[] = [];
  for (let i = 0; i < 5; i++) ids.push((await org.passports.create({ category: "general", data: {} })).id);
  await feedUntil(t.organizationId, t.testKey, (events) =>
    ids.every((id) => events.some((e) => e.related.object === "passport" && e.related.id === id)),
  );

  // Pages of two: the iterator follows next_cursor until has_more is false.
  const feed = org.events.list({ type: ["passport.created"], limit: 2 });
  let pages = 0;
  const created: string[] = [];
  for await (const page of feed.pages()) {
    pages++;
    for (const e of page.data) if (e.related.object === "passport") created.push(e.related.id);
  }
  expect(created.slice(-5)).toEqual(ids);
  expect(new Set(created).size).toBe(created.length);
  expect(pages).toBeGreaterThanOrEqual(Math.ceil(created.length / 2));
  expect(typeof feed.cursor).toBe("string");

  // Nothing new since: reading on from the cursor gives nothing, then exactly what came after.
  expect(await org.events.list({ type: ["passport.created"], cursor: feed.cursor! }).toArray()).toEqual([]);
  const later = await org.passports.create({ category: "battery" });
  const until = Date.now() + 15_000;
  let fresh: Event[] = [];
  while (fresh.length === 0 && Date.now() < until) {
    fresh = await org.events.list({ type: ["passport.created"], cursor: feed.cursor! }).toArray();
    if (fresh.length === 0) await new Promise((r) => setTimeout(r, 100));
  }
  expect(fresh.map((e) => e.related.object === "passport" && e.related.id)).toEqual([later.id]);
});

it("surfaces a refusal as a typed error with its code, details and request_id", async () => {
  const org = h.sdk(t.testKey).organization(t.organizationId);
  const first = await org.passports.create({ category: "textile", external_id: `dup-${Date.now()}` });
  const err = await org.passports
    .create({ category: "textile", external_id: first.external_id })
    .catch((e: unknown) => e);
  if (!isDppError(err, "already_exists")) throw err;
  expect(err).toMatchObject({ status: 409, code: "already_exists", details: { passport_id: first.id } });
  expect(err.requestId).toMatch(/^req_[0-9a-f]{24}$/);
  expect(err.attempts).toBe(1);

  const renamed = await org.passports.update(
    first.id,
    { data: { product_name: "Renamed" } },
    { expectedVersion: first.version },
  );
  expect(renamed.version).toBe(first.version + 1);
  const stale = await org.passports
    .update(first.id, { data: { product_name: "Again" } }, { expectedVersion: first.version })
    .catch((e: DppError) => e);
  expect(stale).toMatchObject({
    code: "precondition_failed",
    status: 412,
    details: { current_version: renamed.version },
  });
});
