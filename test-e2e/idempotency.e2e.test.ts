/**
 * Idempotency through HTTP (spec: Retry rules; docs/decisions/0010).
 *
 * The big scenario: 480 distinct Idempotency-Keys create 480 passports. 100 of
 * those keys are sent twice with the same body, both copies at the same moment;
 * 20 others are sent a second time, also at the same moment, with another body.
 * A copy that finds its key still in flight gets 409 resource_busy with
 * Retry-After and, as the spec tells clients, waits and sends the same request
 * again. Result: exactly 480 passports, 100 identical replays (same status and
 * body, Idempotent-Replayed: true on exactly one copy of each pair) and 20
 * idempotency_conflict answers.
 */
import { envelope, startHarness, type ApiResponse, type Harness, type Tenant } from "./support/harness";

let h: Harness;
let t: Tenant;

beforeAll(async () => {
  // 600+ writes from one key in well under a minute: lift the per-key limit for this stack only.
  process.env.RATE_LIMIT_PER_KEY_PER_MINUTE = "100000";
  h = await startHarness("e2e_idem");
  t = await h.tenant("Idempotent Brand");
});
afterAll(() => h?.close());

const passports = (org: string) => `/organizations/${org}/passports`;
const create = (key: string, idem: string | undefined, body: unknown, org = t.organizationId) =>
  h.request(passports(org), {
    key,
    body,
    headers: idem === undefined ? {} : { "idempotency-key": idem },
  });

/** Sends a request; on 409 resource_busy waits Retry-After and sends it again, as a client should. */
async function sendRetryingBusy(
  send: () => Promise<ApiResponse>,
): Promise<{ res: ApiResponse; busy: number }> {
  let busy = 0;
  for (;;) {
    const res = await send();
    if (res.status === 409 && res.body?.error?.code === "resource_busy") {
      busy++;
      expect(res.headers.get("retry-after")).toMatch(/^\d+$/);
      await new Promise((r) => setTimeout(r, Number(res.headers.get("retry-after")) * 1000));
      continue;
    }
    return { res, busy };
  }
}

async function pool<T>(items: T[], width: number, work: (item: T) => Promise<void>) {
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < items.length) await work(items[next++]!);
    }),
  );
}

it("500 concurrent creates, 100 keys sent twice, 20 reused with another body: 480 passports, 100 replays, 20 conflicts", async () => {
  const run = `run-${Date.now()}`;
  const bodyOf = (i: number, variant = "") => ({
    category: "textile",
    external_id: `${run}-${variant}${i}`,
    data: { product_name: `Shirt ${i}${variant}` },
  });
  type Group = { i: number; kind: "once" | "twice" | "conflict" };
  const groups: Group[] = Array.from({ length: 480 }, (_, i) => ({
    i,
    kind: i < 100 ? "twice" : i < 120 ? "conflict" : "once",
  }));
  // Spread the kinds through the run so duplicates overlap with ordinary traffic.
  groups.sort((a, b) => ((a.i * 7919) % 480) - ((b.i * 7919) % 480));

  let replays = 0;
  let conflicts = 0;
  let busyRetries = 0;
  const created: ApiResponse[] = [];
  await pool(groups, 40, async (g) => {
    const key = `${run}-key-${g.i}`;
    const first = () => create(t.testKey, key, bodyOf(g.i));
    if (g.kind === "once") {
      const { res } = await sendRetryingBusy(first);
      h.expectStatus(res, 201);
      expect(res.headers.get("idempotent-replayed")).toBeNull();
      created.push(res);
      return;
    }
    const second = g.kind === "twice" ? first : () => create(t.testKey, key, bodyOf(g.i, "other-"));
    // Both copies at the same moment.
    const [a, b] = await Promise.all([sendRetryingBusy(first), sendRetryingBusy(second)]);
    busyRetries += a.busy + b.busy;
    if (g.kind === "twice") {
      const marked = [a.res, b.res].filter((r) => r.headers.get("idempotent-replayed") === "true");
      expect(marked).toHaveLength(1);
      h.expectStatus(a.res, 201);
      h.expectStatus(b.res, 201);
      expect(b.res.text).toBe(a.res.text); // byte for byte, the original request_id-free body included
      replays++;
      created.push(a.res);
    } else {
      // Whichever copy claimed the key first created the passport; the other is a conflict.
      const codes = [a.res, b.res].map((r) => (r.status === 201 ? "created" : envelope(r).code)).sort();
      expect(codes).toEqual(["created", "idempotency_conflict"]);
      for (const r of [a.res, b.res])
        if (r.status === 409) expect(r.headers.get("idempotent-replayed")).toBeNull();
      conflicts++;
      created.push(a.res.status === 201 ? a.res : b.res);
    }
  });

  // Count the passports the organization really has.
  const ids = new Set<string>();
  let cursor: string | null = null;
  do {
    const page: ApiResponse = await h.request(
      `${passports(t.organizationId)}?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`,
      { key: t.testKey },
    );
    expect(page.status).toBe(200);
    for (const p of page.body.data) if (String(p.external_id).startsWith(run)) ids.add(p.id);
    cursor = page.body.has_more ? page.body.next_cursor : null;
  } while (cursor);

  expect(ids.size).toBe(480);
  expect(new Set(created.map((r) => r.body.id)).size).toBe(480);
  expect(replays).toBe(100);
  expect(conflicts).toBe(20);
  // Informational: how often a copy found its twin still in flight.
  console.log(
    `idempotency scenario: 480 passports, ${replays} replays, ${conflicts} conflicts, ${busyRetries} resource_busy retries`,
  );
}, 300_000);

describe("rules", () => {
  it("replays the recorded answer of a refused body, and refuses the key on another path", async () => {
    const key = `bad-body-${Date.now()}`;
    const a = await create(t.testKey, key, { category: "no_such_category_xyz" });
    expect(a.status).toBeGreaterThanOrEqual(400);
    const b = await create(t.testKey, key, { category: "no_such_category_xyz" });
    expect(b.status).toBe(a.status);
    expect(b.text).toBe(a.text);
    // The body is the original's, request_id included; the Request-Id header names this exchange.
    expect(b.body.error.request_id).toBe(a.body.error.request_id);
    expect(b.headers.get("request-id")).not.toBe(a.body.error.request_id);
    expect(b.headers.get("idempotent-replayed")).toBe("true");
    // Same key, same body, another organization's path: another scope, so not a conflict there...
    const other = await h.tenant("Other");
    const c = await create(other.testKey, key, { category: "textile" }, other.organizationId);
    expect(c.status).toBe(201);
    // ...and the same key in the other mode of the same organization is another scope too.
    const d = await create(t.liveKey, key, { category: "textile" });
    expect(d.status).toBe(201);
    expect(d.headers.get("idempotent-replayed")).toBeNull();
  });

  it("refuses a malformed Idempotency-Key with 400 invalid_request and records nothing", async () => {
    for (const bad of ["", "x".repeat(256), "caf\u00e9"]) {
      const res = await h.request(passports(t.organizationId), {
        key: t.testKey,
        body: { category: "textile" },
        headers: { "idempotency-key": bad },
      });
      expect(res.status).toBe(400);
      expect(envelope(res)).toMatchObject({
        code: "invalid_request",
        details: { issues: [{ source: { header: "Idempotency-Key" } }] },
      });
    }
    const ok = await create(t.testKey, "x".repeat(255), { category: "textile" });
    expect(ok.status).toBe(201);
  });

  it("does not record an authentication refusal: the same key works once the credential is fixed", async () => {
    const key = `auth-${Date.now()}`;
    const refused = await create("dpp_sk_test_nope", key, { category: "textile" });
    expect(refused.status).toBe(401);
    const ok = await create(t.testKey, key, { category: "textile" });
    expect(ok.status).toBe(201);
    expect(ok.headers.get("idempotent-replayed")).toBeNull();
  });

  it("does not record an unreachable service: a same-key retry runs again once it is back", async () => {
    const key = `down-${Date.now()}`;
    await h.stack.stopService("passport");
    try {
      const down = await create(t.testKey, key, { category: "textile", external_id: key });
      expect(down.status).toBe(500);
      expect(envelope(down)).toMatchObject({
        code: "internal_error",
        details: { reason: "upstream_unavailable" },
      });
    } finally {
      await h.stack.startService("passport");
    }
    // Wait until the gateway reaches the restarted service again (its channel reconnects with backoff).
    for (let i = 0; i < 100 && (await h.request("/categories", { key: t.testKey })).status !== 200; i++)
      await new Promise((r) => setTimeout(r, 100));
    const { res } = await sendRetryingBusy(() =>
      create(t.testKey, key, { category: "textile", external_id: key }),
    );
    if (res.status !== 201) console.log(res.status, res.text, [...res.headers.entries()]);
    expect(res.status).toBe(201);
    expect(res.headers.get("idempotent-replayed")).toBeNull();
  });
});
