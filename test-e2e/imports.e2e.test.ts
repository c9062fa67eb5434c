/**
 * Imports through the API: every refusal of POST .../imports (shape up front, with pointers; max_rows; the plan
 * rule of live writes; Idempotency-Keys), a queued job as the spec shows it (the stack starts with the worker
 * off), then the worker on: a job with good and bad rows and its row pages, the passports and their events, and
 * one organization's big job not holding up another's.
 */
import { envelope, startHarness, type Harness, type Tenant } from "./support/harness";
import { publishableTextile } from "./support/fixtures";

jest.setTimeout(240_000);

let h: Harness;
let t: Tenant;

beforeAll(async () => {
  h = await startHarness("imports", { env: { IMPORTS_WORKER: "off", IMPORTS_POLL_MS: "50" } });
  t = await h.tenant("Importer", "pro");
});
afterAll(async () => {
  await h?.close();
});

const imports = (org = t.organizationId) => `/organizations/${org}/imports`;
const row = (i: number, extra: Record<string, unknown> = {}) => ({
  category: "textile",
  external_id: `sku-${i}`,
  data: publishableTextile({ product_name: `Shirt ${i}` }),
  ...extra,
});
const post = (body: unknown, key = t.testKey, headers: Record<string, string> = {}) =>
  h.request(imports(), { key, body, headers });

/** A valid GTIN-13 from a 12-digit stem, with its check digit. */
function gtin13(stem12: string): string {
  let sum = 0;
  for (let i = 0; i < 12; i++) sum += (stem12.charCodeAt(11 - i) - 48) * (i % 2 === 0 ? 3 : 1);
  return stem12 + ((10 - (sum % 10)) % 10);
}

async function waitForJob(
  id: string,
  key = t.testKey,
  each?: (job: any) => void,
  org = t.organizationId,
): Promise<any> {
  const until = Date.now() + 60_000;
  for (;;) {
    const res = await h.request(`${imports(org)}/${id}?row_limit=0`, { key });
    h.expectStatus(res, 200);
    each?.(res.body);
    if (res.body.status === "completed" || res.body.status === "failed") return res.body;
    if (Date.now() > until) throw new Error(`job ${id} still ${res.body.status}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe("POST .../imports refusals", () => {
  it("refuses 501 rows under max_rows, no rows, and a body without rows", async () => {
    const many = await post({ rows: Array.from({ length: 501 }, (_, i) => row(i)) });
    h.expectStatus(many, 422);
    expect(envelope(many)).toMatchObject({
      code: "validation_failed",
      details: { issues: [{ source: { pointer: "/rows" }, rule: "max_rows" }], limit: 500, requested: 501 },
    });
    const none = await post({ rows: [] });
    h.expectStatus(none, 422);
    expect(envelope(none).details.issues).toEqual([expect.objectContaining({ rule: "min_rows" })]);
    const missing = await post({});
    h.expectStatus(missing, 422);
    expect(envelope(missing).details.issues).toEqual([
      expect.objectContaining({ source: { pointer: "/rows" }, rule: "required" }),
    ]);
    const notArray = await post({ rows: { category: "textile" } });
    h.expectStatus(notArray, 422);
    expect(envelope(notArray).details.issues).toEqual([expect.objectContaining({ rule: "type" })]);
  });

  it("refuses every shape issue of every row with its pointer, dropping nothing", async () => {
    const res = await post({
      rows: [
        row(0),
        row(1, { colour: "red" }),
        { data: {} },
        { category: 7, data: [], external_id: 5 },
        "not a row",
      ],
      note: "x",
    });
    h.expectStatus(res, 422);
    const issues = envelope(res).details.issues.map((i: any) => [i.source.pointer, i.rule]);
    expect(issues).toEqual(
      expect.arrayContaining([
        ["/note", "unknown_field"],
        ["/rows/1/colour", "unknown_field"],
        ["/rows/2/category", "required"],
        ["/rows/3/category", "type"],
        ["/rows/3/data", "type"],
        ["/rows/3/external_id", "type"],
        ["/rows/4", "type"],
      ]),
    );
    expect(issues).toHaveLength(7);
    const list = await h.request(imports(), { key: t.testKey });
    expect(list.body.data).toEqual([]);
  });

  it("refuses a live import on a plan without live writes before queueing it; test mode is open", async () => {
    const trial = await h.tenant("Trial brand", "trial");
    const live = await h.request(imports(trial.organizationId), {
      key: trial.liveKey,
      body: { rows: [row(0)] },
    });
    h.expectStatus(live, 402);
    expect(envelope(live).code).toBe("no_subscription");
    const listed = await h.request(imports(trial.organizationId), { key: trial.liveKey });
    expect(listed.body.data).toEqual([]);
    const test = await h.request(imports(trial.organizationId), {
      key: trial.testKey,
      body: { rows: [row(0)] },
    });
    h.expectStatus(test, 202);
  });

  it("queues once per Idempotency-Key and refuses the key with another body", async () => {
    const a = await post({ rows: [row(900)] }, t.testKey, { "idempotency-key": "imp-1" });
    h.expectStatus(a, 202);
    const b = await post({ rows: [row(900)] }, t.testKey, { "idempotency-key": "imp-1" });
    h.expectStatus(b, 202);
    expect(b.body.id).toBe(a.body.id);
    expect(b.headers.get("idempotent-replayed")).toBe("true");
    const c = await post({ rows: [row(901)] }, t.testKey, { "idempotency-key": "imp-1" });
    h.expectStatus(c, 409);
    expect(envelope(c).code).toBe("idempotency_conflict");
  });

  it("refuses bad query parameters and another tenant's or mode's job", async () => {
    const job = await post({ rows: [row(950)] });
    h.expectStatus(job, 202);
    const badStatus = await h.request(`${imports()}?status=done`, { key: t.testKey });
    h.expectStatus(badStatus, 400);
    expect(envelope(badStatus).details.issues[0]).toMatchObject({
      source: { parameter: "status" },
      rule: "enum",
    });
    const badLimit = await h.request(`${imports()}/${job.body.id}?row_limit=501`, { key: t.testKey });
    h.expectStatus(badLimit, 400);
    const badAfter = await h.request(`${imports()}/${job.body.id}?after_row_index=x`, { key: t.testKey });
    h.expectStatus(badAfter, 400);
    const otherMode = await h.request(`${imports()}/${job.body.id}`, { key: t.liveKey });
    h.expectStatus(otherMode, 404);
    expect(envelope(otherMode).code).toBe("resource_not_found");
    const other = await h.tenant("Other");
    const otherOrg = await h.request(`${imports(other.organizationId)}/${job.body.id}`, {
      key: other.testKey,
    });
    h.expectStatus(otherOrg, 404);
    const missing = await h.request(`${imports()}/imp_missing`, { key: t.testKey });
    h.expectStatus(missing, 404);
  });
});

describe("a job", () => {
  const stem = 400638200000;
  const gtinA = gtin13(String(stem));
  let jobId: string;
  let preexisting: string;

  it("is queued: total_rows = pending_rows, attempts 0, not started, listed under status=queued", async () => {
    const before = await h.request(`/organizations/${t.organizationId}/passports`, {
      key: t.testKey,
      body: { category: "textile", external_id: "sku-taken", data: publishableTextile() },
    });
    h.expectStatus(before, 201);
    preexisting = before.body.id;
    const rows = [
      row(1, { data: publishableTextile({ gtin: gtinA }) }), // 0: succeeds
      row(2, { category: "spaceship" }), // 1: unknown_category
      row(3, { data: { product_name: 42 } }), // 2: validation_failed (data checked per row)
      row(1), // 3: the same external_id as row 0: already_exists
      row(4, { data: publishableTextile({ gtin: gtinA }) }), // 4: row 0's GTIN: gtin_in_use
      { category: "textile", external_id: "sku-taken", data: {} }, // 5: a passport has it: already_exists
      { category: "textile", data: publishableTextile() }, // 6: succeeds, no external_id
    ];
    const res = await post({ rows });
    h.expectStatus(res, 202);
    expect(res.body).toMatchObject({
      object: "import_job",
      status: "queued",
      organization_id: t.organizationId,
      livemode: false,
      total_rows: 7,
      pending_rows: 7,
      succeeded_rows: 0,
      failed_rows: 0,
      attempts: 0,
      started_at: null,
      completed_at: null,
    });
    expect(res.body.name).toBe(`organizations/${t.organizationId}/imports/${res.body.id}`);
    jobId = res.body.id;
    const got = await h.request(`${imports()}/${jobId}`, { key: t.testKey });
    h.expectStatus(got, 200);
    expect(got.body).toMatchObject({ status: "queued", pending_rows: 7 });
    expect(got.body.rows).toEqual({ object: "list", data: [], has_more: false, next_after_row_index: null });
    const queued = await h.request(`${imports()}?status=queued&limit=100`, { key: t.testKey });
    expect(queued.body.data.map((j: any) => j.id)).toContain(jobId);
    const completed = await h.request(`${imports()}?status=completed`, { key: t.testKey });
    expect(completed.body.data).toEqual([]);
  });

  it("is processed once a worker runs: good rows succeed, bad rows fail with their codes, in row order", async () => {
    await h.stack.killService("imports");
    await h.stack.startService("imports", { env: { IMPORTS_WORKER: "on" } });
    const job = await waitForJob(jobId, t.testKey, (j) =>
      expect(j.succeeded_rows + j.failed_rows + j.pending_rows).toBe(j.total_rows),
    );
    expect(job).toMatchObject({
      status: "completed",
      succeeded_rows: 2,
      failed_rows: 5,
      pending_rows: 0,
      attempts: 1,
    });
    expect(Date.parse(job.started_at)).toBeLessThanOrEqual(Date.parse(job.completed_at));

    // Row pages of 3: 0-2, 3-5, 6.
    const seen: any[] = [];
    let after: number | null = null;
    const pages: number[][] = [];
    do {
      const q: string = after === null ? "row_limit=3" : `row_limit=3&after_row_index=${after}`;
      const res = await h.request(`${imports()}/${jobId}?${q}`, { key: t.testKey });
      h.expectStatus(res, 200);
      pages.push(res.body.rows.data.map((r: any) => r.row_index));
      seen.push(...res.body.rows.data);
      after = res.body.rows.next_after_row_index;
      expect(res.body.rows.has_more).toBe(after !== null);
    } while (after !== null);
    expect(pages).toEqual([[0, 1, 2], [3, 4, 5], [6]]);
    const codes = seen.map((r) => (r.status === "succeeded" ? "ok" : r.error.code));
    expect(codes).toEqual([
      "ok",
      "unknown_category",
      "validation_failed",
      "already_exists",
      "gtin_in_use",
      "already_exists",
      "ok",
    ]);
    expect(seen[1]).toMatchObject({
      object: "import_row",
      external_id: "sku-2",
      passport_id: null,
      passport_name: null,
    });
    expect(seen[2].error.details.issues[0].source.pointer).toMatch(/^\/data\/product_name/);
    expect(seen[5].error.details.passport_id).toBe(preexisting);
    expect(seen[6].external_id).toBeNull();
    for (const r of [seen[0], seen[6]]) {
      expect(r.passport_name).toBe(`organizations/${t.organizationId}/passports/${r.passport_id}`);
      const p = await h.request(`/organizations/${t.organizationId}/passports/${r.passport_id}`, {
        key: t.testKey,
      });
      h.expectStatus(p, 200);
      expect(p.body.status).toBe("draft");
    }
    const first = await h.request(`/organizations/${t.organizationId}/passports/${seen[0].passport_id}`, {
      key: t.testKey,
    });
    expect(first.body).toMatchObject({ external_id: "sku-1", gtin: `0${gtinA}` });

    // Each created passport's passport.created, then import.completed with its counts.
    const until = Date.now() + 30_000;
    let types: { type: string; id: string; related: any }[] = [];
    for (;;) {
      const feed = await h.request(`/organizations/${t.organizationId}/events?limit=100`, { key: t.testKey });
      types = feed.body.data.map((e: any) => ({ type: e.type, id: e.related.id, related: e.related }));
      if (types.some((e) => e.type === "import.completed" && e.id === jobId) || Date.now() > until) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const done = types.findIndex((e) => e.type === "import.completed" && e.id === jobId);
    expect(done).toBeGreaterThanOrEqual(0);
    expect(types[done]!.related).toMatchObject({
      object: "import_job",
      status: "completed",
      total_rows: 7,
      succeeded_rows: 2,
      failed_rows: 5,
    });
    for (const id of [seen[0].passport_id, seen[6].passport_id]) {
      const created = types.findIndex((e) => e.type === "passport.created" && e.id === id);
      expect(created).toBeGreaterThanOrEqual(0);
      expect(created).toBeLessThan(done);
    }
  });

  it("runs queued jobs of every organization in turn: a small job does not wait for another's big one", async () => {
    await h.stack.killService("imports");
    await h.stack.startService("imports", {
      env: { IMPORTS_WORKER: "off" },
    });
    const other = await h.tenant("Small importer");
    const big = await post({ rows: Array.from({ length: 500 }, (_, i) => row(10_000 + i)) });
    h.expectStatus(big, 202);
    const small = await h.request(imports(other.organizationId), {
      key: other.testKey,
      body: { rows: [row(1), row(2)] },
    });
    h.expectStatus(small, 202);
    await h.stack.killService("imports");
    await h.stack.startService("imports", {
      env: { IMPORTS_WORKER: "on", IMPORTS_WORKER_CONCURRENCY: "1", IMPORTS_BATCH_ROWS: "50" },
    });
    const smallDone = await waitForJob(small.body.id, other.testKey, undefined, other.organizationId);
    const bigAtThatTime = await h.request(`${imports()}/${big.body.id}?row_limit=0`, { key: t.testKey });
    const bigDone = await waitForJob(big.body.id);
    expect(smallDone.status).toBe("completed");
    expect(bigAtThatTime.body.pending_rows).toBeGreaterThan(0);
    expect(bigDone).toMatchObject({ status: "completed", succeeded_rows: 500, failed_rows: 0 });
    expect(Date.parse(smallDone.completed_at)).toBeLessThan(Date.parse(bigDone.completed_at));
    const all = await h.request(`${imports()}/${big.body.id}?row_limit=500`, { key: t.testKey });
    expect(all.body.rows.data).toHaveLength(500);
    expect(new Set(all.body.rows.data.map((r: any) => r.passport_id)).size).toBe(500);
  });
});

describe("the SDK's importRows", () => {
  it("splits rows into jobs, follows them and yields every row's result in the rows' order", async () => {
    const org = h.sdk(t.testKey).organization(t.organizationId);
    const input = Array.from({ length: 7 }, (_, i) =>
      i === 4 ? { category: "spaceship", data: {} } : row(20_000 + i),
    );
    const progress: number[] = [];
    const results = [];
    for await (const r of org.imports.importRows(input, {
      jobSize: 3,
      pollMs: 50,
      onProgress: (p) => progress.push(p.processed),
    }))
      results.push(r);
    expect(results.map((r) => r.index)).toEqual([0, 1, 2, 3, 4, 5, 6]);
    expect(new Set(results.map((r) => r.job_id)).size).toBe(3);
    expect(results.map((r) => r.status)).toEqual([
      "succeeded",
      "succeeded",
      "succeeded",
      "succeeded",
      "failed",
      "succeeded",
      "succeeded",
    ]);
    expect(results[4]!.error!.code).toBe("unknown_category");
    expect(results[6]!.input).toEqual(input[6]);
    expect(progress[progress.length - 1]).toBe(7);
    const jobs = await org.imports.list({ status: "completed" }).toArray();
    expect(jobs.map((j) => j.id)).toEqual(expect.arrayContaining([...new Set(results.map((r) => r.job_id))]));
  });
});
