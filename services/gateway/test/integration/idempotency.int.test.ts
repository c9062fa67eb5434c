/** The idempotency store on a real database: claim, replay, conflict, busy, takeover, reaping. */
import { sql } from "kysely";
import { IdempotencyStore } from "../../src/idempotency/idempotency";
import { refusal, startStore, type Store } from "../harness";

let s: Store;
beforeAll(async () => {
  s = await startStore("gw_idem");
});
afterAll(() => s?.close());

const scope = (key: string, over = {}) => ({
  organizationId: "org_a",
  livemode: false,
  callerOrganizationId: "org_a",
  key,
  ...over,
});
const meta = { method: "POST", path: "/v1/organizations/org_a/passports", requestId: "req_1" };

it("claims, answers busy while in flight, replays when finished, conflicts on another fingerprint", async () => {
  const store = new IdempotencyStore(s.sql, 60_000);
  const first = await store.claim(scope("k1"), "fp", meta);
  expect(first.kind).toBe("claimed");
  const busy = await refusal(store.claim(scope("k1"), "fp", meta));
  expect(busy.code).toBe("resource_busy");
  expect(busy.headers["Retry-After"]).toBe("1");
  expect((await refusal(store.claim(scope("k1"), "other", meta))).code).toBe("idempotency_conflict");
  await store.finish((first as { id: number }).id, {
    status: 201,
    body: '{"b":1,"a":2}',
    headers: { Location: "x" },
  });
  expect(await store.claim(scope("k1"), "fp", meta)).toEqual({
    kind: "replay",
    response: { status: 201, body: '{"b":1,"a":2}', headers: { Location: "x" } },
  });
  // Other organization in the path, other mode, other calling organization: other scopes.
  for (const over of [{ organizationId: "org_b" }, { livemode: true }, { callerOrganizationId: "org_m" }])
    expect((await store.claim(scope("k1", over), "fp", meta)).kind).toBe("claimed");
});

it("gives a released key back, and lets an abandoned claim be taken over", async () => {
  const store = new IdempotencyStore(s.sql, 60_000);
  const a = await store.claim(scope("k2"), "fp", meta);
  await store.release((a as { id: number }).id);
  expect((await store.claim(scope("k2"), "fp", meta)).kind).toBe("claimed");
  const short = new IdempotencyStore(s.sql, 1);
  await short.claim(scope("k3"), "fp", meta);
  await new Promise((r) => setTimeout(r, 20));
  expect((await short.claim(scope("k3"), "fp", meta)).kind).toBe("claimed");
});

it("reaps records older than 24 h, and ignores them before they are reaped", async () => {
  const store = new IdempotencyStore(s.sql, 60_000);
  const a = await store.claim(scope("old"), "fp", meta);
  await store.finish((a as { id: number }).id, { status: 201, body: "{}", headers: {} });
  await sql`update idempotency_record set created_at = now() - interval '25 hours' where idempotency_key = 'old'`.execute(
    s.sql,
  );
  // Past retention: a new request under the key runs again, even with another body.
  expect((await store.claim(scope("old"), "another", meta)).kind).toBe("claimed");
  await sql`update idempotency_record set created_at = now() - interval '25 hours' where idempotency_key = 'old'`.execute(
    s.sql,
  );
  expect(await store.reap()).toBe(1);
  const left = await s.sql
    .selectFrom("idempotency_record")
    .select("idempotency_key")
    .where("idempotency_key", "=", "old")
    .execute();
  expect(left).toEqual([]);
});
