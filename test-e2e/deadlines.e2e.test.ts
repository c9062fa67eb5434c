/**
 * A 5xx means that nothing was applied (docs/decisions/0044-a-5xx-means-nothing-applied.md), as a client that
 * follows the retry rules meets it: a write that waits on a row another transaction holds past the deadline, and
 * keyed creates sent while the passport service is stopped (SIGSTOP) past the deadline and its grace. In both the
 * change is not applied when the service goes on, and a retry with a NEW key, as the spec's retry rule 2 says for a
 * 5xx, stores exactly one passport.
 */
import pg from "pg";
import { startHarness, type ApiResponse, type Harness, type Tenant } from "./support/harness";

/** The gateway's deadline in these tests (the default is 5 s), and the grace it waits past it (the kit's). */
const DEADLINE_MS = 1500;
const GRACE_MS = 1000;

let h: Harness;
let t: Tenant;

beforeAll(async () => {
  h = await startHarness("e2e_deadlines", {
    env: { GRPC_DEADLINE_MS: String(DEADLINE_MS), RATE_LIMIT_PER_KEY_PER_MINUTE: "100000" },
  });
  t = await h.tenant("Deadline Brand");
});
afterAll(async () => {
  await h?.close();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const passports = () => `/organizations/${t.organizationId}/passports`;

async function withDb<T>(fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: h.db.url });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

/** Passports of the tenant with this external_id, as stored. */
async function storedWith(externalId: string): Promise<number> {
  return withDb(async (c) =>
    Number(
      (
        await c.query(
          "select count(*) as n from passport.passport where organization_id = $1 and external_id = $2",
          [t.organizationId, externalId],
        )
      ).rows[0].n,
    ),
  );
}

/** Holds the row lock of passport `id` in a transaction of its own until the returned function is called. */
async function holdRowLock(id: string): Promise<() => Promise<void>> {
  const c = new pg.Client({ connectionString: h.db.url });
  await c.connect();
  await c.query("begin");
  await c.query("select 1 from passport.passport where id = $1 for update", [id]);
  return async () => {
    await c.query("rollback");
    await c.end();
  };
}

async function create(body: object, key?: string): Promise<ApiResponse> {
  return h.request(passports(), {
    key: t.testKey,
    body,
    headers: key ? { "idempotency-key": key } : {},
  });
}

describe("a write that waits on a locked row past its deadline", () => {
  it.each([
    ["without an Idempotency-Key", undefined],
    ["with an Idempotency-Key", "patch-locked-key"],
  ])("%s is refused resource_busy and is not applied when the lock is released", async (_, key) => {
    const created = await create({ category: "textile", data: { product_name: "Locked shirt" } });
    h.expectStatus(created, 201);
    const id = created.body.id as string;
    const release = await holdRowLock(id);
    const started = Date.now();
    let res: ApiResponse;
    try {
      res = await h.request(`${passports()}/${id}`, {
        method: "PATCH",
        key: t.testKey,
        body: { data: { product_name: "Changed while locked" } },
        headers: key ? { "idempotency-key": key } : {},
      });
    } finally {
      // The lock is held past the deadline and its grace, then released: the write must not go on.
      const held = Date.now() - started;
      await sleep(Math.max(0, DEADLINE_MS + GRACE_MS + 500 - held));
      await release();
    }
    const took = Date.now() - started;
    // Nothing was applied, not even once the lock was released...
    await sleep(500);
    const after = await h.request(`${passports()}/${id}`, { key: t.testKey });
    h.expectStatus(after, 200);
    expect(after.body.data.product_name).toBe("Locked shirt");
    expect(after.body.version).toBe(created.body.version);
    // ...and the answer says so: another request held the resource until the deadline.
    expect(took).toBeGreaterThanOrEqual(DEADLINE_MS);
    h.expectStatus(res, 409);
    expect(res.body.error.code).toBe("resource_busy");
    expect(res.body.error.details.reason).toBe("lock_wait_timeout");
    expect(res.headers.get("retry-after")).toBe("1");

    // The refusal was not recorded: the retry (same key, as Retry-After allows) applies the change once.
    const retry = await h.request(`${passports()}/${id}`, {
      method: "PATCH",
      key: t.testKey,
      body: { data: { product_name: "Changed while locked" } },
      headers: key ? { "idempotency-key": key } : {},
    });
    h.expectStatus(retry, 200);
    expect(retry.body.version).toBe(created.body.version + 1);
  });
});

describe("keyed creates sent while the passport service is stopped past the deadline", () => {
  it("answer outcome_unknown, apply nothing when the service resumes, and a retry with a new key stores exactly one passport each", async () => {
    const passport = h.stack.services.passport.process;
    // Five requests per second for two seconds, all sent while the service is stopped.
    const n = 10;
    passport.kill("SIGSTOP");
    let answers: ApiResponse[];
    try {
      const sent: Array<Promise<ApiResponse>> = [];
      for (let i = 0; i < n; i++) {
        sent.push(
          create(
            { category: "textile", external_id: `paused-${i}`, data: { product_name: `Paused ${i}` } },
            `paused-first-${i}`,
          ),
        );
        await sleep(200);
      }
      answers = await Promise.all(sent);
      // Stopped a moment longer than the last request's deadline and grace.
      await sleep(500);
    } finally {
      passport.kill("SIGCONT");
    }
    // The service resumes with every request in its socket: none of them is applied.
    await sleep(1500);
    for (let i = 0; i < n; i++) expect(await storedWith(`paused-${i}`)).toBe(0);
    // No answer came back in time: the gateway cannot know, and says to retry under the same key.
    for (const res of answers) {
      h.expectStatus(res, 500);
      expect(res.body.error.code).toBe("internal_error");
      expect(res.body.error.details).toEqual({ reason: "outcome_unknown", service: "passport" });
      expect(res.body.error.message).toMatch(/SAME Idempotency-Key/);
    }

    // The retry rule for a 5xx: a NEW key. Each stores exactly one passport.
    for (let i = 0; i < n; i++) {
      const retry = await create(
        { category: "textile", external_id: `paused-${i}`, data: { product_name: `Paused ${i}` } },
        `paused-retry-${i}`,
      );
      h.expectStatus(retry, 201);
    }
    await sleep(300);
    for (let i = 0; i < n; i++) expect(await storedWith(`paused-${i}`)).toBe(1);
  });

  it("a retry under the SAME key, as outcome_unknown asks, is answered once the service is back", async () => {
    const passport = h.stack.services.passport.process;
    passport.kill("SIGSTOP");
    let first: ApiResponse;
    try {
      first = await create(
        { category: "textile", external_id: "same-key", data: { product_name: "Same key" } },
        "same-key-1",
      );
    } finally {
      passport.kill("SIGCONT");
    }
    h.expectStatus(first, 500);
    expect(first.body.error.details.reason).toBe("outcome_unknown");
    const retry = await create(
      { category: "textile", external_id: "same-key", data: { product_name: "Same key" } },
      "same-key-1",
    );
    h.expectStatus(retry, 201);
    const again = await create(
      { category: "textile", external_id: "same-key", data: { product_name: "Same key" } },
      "same-key-1",
    );
    h.expectStatus(again, 201);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(again.body.id).toBe(retry.body.id);
    expect(await storedWith("same-key")).toBe(1);
  });
});
