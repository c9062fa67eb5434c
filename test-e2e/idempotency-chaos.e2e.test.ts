/**
 * Writes that are never doubled or orphaned, through what breaks in production: a passport service
 * paused past the gateway's deadline while creates are in flight, and a gateway killed mid-load. Every
 * client retries its request with its own Idempotency-Key until it gets an answer (after a timeout, a
 * 409 resource_busy, or a connection the dead gateway dropped). In the end each key has exactly one
 * passport and each passport exactly one passport.created in the feed.
 */
import pg from "pg";
import { startHarness, type ApiResponse, type Harness, type Tenant } from "./support/harness";

let h: Harness;
let t: Tenant;

beforeAll(async () => {
  // A short gateway deadline makes a 3 s pause of the service a timeout for every call it holds.
  process.env.GRPC_DEADLINE_MS = "1000";
  process.env.RATE_LIMIT_PER_KEY_PER_MINUTE = "100000";
  h = await startHarness("e2e_chaos");
  t = await h.tenant("Chaos Brand");
});
afterAll(async () => {
  delete process.env.GRPC_DEADLINE_MS;
  await h?.close();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Tally {
  timeouts: number;
  busy: number;
  dropped: number;
  replays: number;
}

/** Sends one create until it is answered 201, retrying with the same Idempotency-Key. */
async function createUntilAnswered(key: string, name: string, tally: Tally): Promise<string> {
  for (let attempt = 0; attempt < 200; attempt++) {
    let res: ApiResponse;
    try {
      res = await h.request(`/organizations/${t.organizationId}/passports`, {
        key: t.testKey,
        body: { category: "textile", data: { product_name: name } },
        headers: { "idempotency-key": key },
      });
    } catch {
      tally.dropped++; // the gateway is gone: connection refused or reset
      await sleep(200);
      continue;
    }
    if (res.status === 201) {
      if (res.headers.get("idempotent-replayed") === "true") tally.replays++;
      return res.body.id as string;
    }
    const code = res.body?.error?.code;
    if (res.status === 409 && code === "resource_busy") tally.busy++;
    else if (res.status >= 500) tally.timeouts++;
    else throw new Error(`unexpected answer ${res.status} ${res.text}`);
    await sleep(Number(res.headers.get("retry-after") ?? "1") * 250);
  }
  throw new Error(`key ${key} was never answered`);
}

async function run(prefix: string, n: number, tally: Tally, chaos: () => Promise<void>) {
  const ids = new Map<string, string>();
  let next = 0;
  const workers = Array.from({ length: 8 }, async () => {
    while (next < n) {
      const i = next++;
      const key = `${prefix}-${i}`;
      ids.set(key, await createUntilAnswered(key, `${prefix} ${i}`, tally));
    }
  });
  await Promise.all([...workers, chaos()]);
  return ids;
}

async function count(sql: string, params: unknown[]): Promise<number> {
  const c = new pg.Client({ connectionString: h.db.url });
  await c.connect();
  try {
    return Number((await c.query(sql, params)).rows[0].n);
  } finally {
    await c.end();
  }
}

it("keeps one passport per key and one passport.created per passport through a paused service and a killed gateway", async () => {
  const tally: Tally = { timeouts: 0, busy: 0, dropped: 0, replays: 0 };

  // 100 creates; a moment in, the passport service stops for 3 s (SIGSTOP), past the 1 s deadline.
  const paused = await run("pause", 100, tally, async () => {
    await sleep(300);
    const passport = h.stack.services.passport.process;
    passport.kill("SIGSTOP");
    await sleep(3000);
    passport.kill("SIGCONT");
  });

  // 100 more; a moment in, the gateway dies (SIGKILL) and comes back.
  const killed = await run("kill", 100, tally, async () => {
    await sleep(300);
    await h.stack.killService("gateway");
    await sleep(500);
    await h.stack.startService("gateway");
  });

  const ids = new Map([...paused, ...killed]);
  expect(ids.size).toBe(200);
  // Each key answered one passport, and no two keys share one.
  expect(new Set(ids.values()).size).toBe(200);
  // The chaos happened: some answers timed out or were dropped, and some retries were replays.
  expect(tally.timeouts + tally.dropped).toBeGreaterThan(0);
  console.log(`chaos: ${JSON.stringify(tally)}`);

  // Nothing else was written: exactly the answered passports exist...
  expect(
    await count(
      "select count(*) as n from passport.passport where organization_id = $1 and livemode = false",
      [t.organizationId],
    ),
  ).toBe(200);
  // ...and the feed holds exactly one passport.created for each.
  const created = new Map<string, number>();
  for (let waited = 0; ; waited += 200) {
    created.clear();
    let cursor: string | null = null;
    do {
      const page: ApiResponse = await h.request(
        `/organizations/${t.organizationId}/events?limit=100&type=passport.created${cursor ? `&cursor=${cursor}` : ""}`,
        { key: t.testKey },
      );
      expect(page.status).toBe(200);
      for (const e of page.body.data) created.set(e.related.id, (created.get(e.related.id) ?? 0) + 1);
      cursor = page.body.has_more ? page.body.next_cursor : null;
    } while (cursor);
    if (created.size >= 200 || waited > 20_000) break;
    await sleep(200);
  }
  expect([...created.keys()].sort()).toEqual([...ids.values()].sort());
  expect([...created.values()].every((n) => n === 1)).toBe(true);
}, 180_000);
