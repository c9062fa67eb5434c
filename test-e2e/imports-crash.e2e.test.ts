/**
 * Exactly once per row across crashes: during a 500-row import the imports worker and the passport service are
 * killed with SIGKILL (mid-batch: passport may have committed rows whose answers never arrived) and started
 * again. The job resumes where it stopped, counts its tries in `attempts`, and ends with exactly 500 row results
 * and 500 passports, none created twice: each row's passport is created under the row's own key.
 */
import { sql } from "kysely";
import { createDb } from "@dpp/kit/internal";
import { startHarness, type Harness, type Tenant } from "./support/harness";
import { publishableTextile } from "./support/fixtures";

jest.setTimeout(300_000);

let h: Harness;
let t: Tenant;

beforeAll(async () => {
  h = await startHarness("imports-crash", {
    // Short leases so that a killed worker's job is taken again soon; small batches so that a kill lands mid-job.
    env: { IMPORTS_LEASE_MS: "2000", IMPORTS_POLL_MS: "50", IMPORTS_BATCH_ROWS: "25" },
  });
  t = await h.tenant("Crash importer", "pro");
});
afterAll(async () => {
  await h?.close();
});

const imports = () => `/organizations/${t.organizationId}/imports`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function readJob(id: string): Promise<any | undefined> {
  try {
    const res = await h.request(`${imports()}/${id}?row_limit=0`, { key: t.testKey });
    return res.status === 200 ? res.body : undefined;
  } catch {
    return undefined;
  }
}

it("kills the imports worker and passport mid-job: exactly 500 row results, no passport twice", async () => {
  const rows = Array.from({ length: 500 }, (_, i) => ({
    category: "textile",
    external_id: `crash-${i}`,
    data: publishableTextile({ product_name: `Crash ${i}` }),
  }));
  const posted = await h.request(imports(), { key: t.testKey, body: { rows } });
  h.expectStatus(posted, 202);
  const id = posted.body.id as string;

  const kills = { imports: 0, passport: 0 };
  const victims: ("imports" | "passport")[][] = [
    ["imports"],
    ["passport"],
    ["imports", "passport"],
    ["imports"],
  ];
  for (const round of victims) {
    // Wait for progress, then kill in the middle of a batch.
    const before = (await readJob(id))?.pending_rows ?? 500;
    const until = Date.now() + 30_000;
    for (;;) {
      const job = await readJob(id);
      if (!job || job.pending_rows < before || job.status === "completed" || Date.now() > until) break;
      await sleep(20);
    }
    if ((await readJob(id))?.status === "completed") break;
    await Promise.all(round.map((v) => h.stack.killService(v, "SIGKILL")));
    for (const v of round) kills[v]++;
    const job = await readJob(id);
    if (job) expect(job.succeeded_rows + job.failed_rows + job.pending_rows).toBe(500);
    await sleep(300);
    await Promise.all(round.map((v) => h.stack.startService(v)));
  }
  expect(kills.imports).toBeGreaterThanOrEqual(1);
  expect(kills.passport).toBeGreaterThanOrEqual(1);

  let job: any;
  const until = Date.now() + 120_000;
  for (;;) {
    job = await readJob(id);
    if (job) expect(job.succeeded_rows + job.failed_rows + job.pending_rows).toBe(500);
    if (job?.status === "completed" || Date.now() > until) break;
    await sleep(100);
  }
  expect(job).toMatchObject({ status: "completed", total_rows: 500, succeeded_rows: 500, pending_rows: 0 });
  expect(job.attempts).toBeGreaterThan(1);

  const all = await h.request(`${imports()}/${id}?row_limit=500`, { key: t.testKey });
  const results = all.body.rows.data as any[];
  expect(results.map((r) => r.row_index)).toEqual(rows.map((_, i) => i));
  expect(results.every((r) => r.status === "succeeded")).toBe(true);
  expect(new Set(results.map((r) => r.passport_id)).size).toBe(500);

  // In passport's own table: one passport per row, each the row's.
  const db = createDb<any>({ url: h.db.url, schema: "passport", applicationName: "imports-crash", max: 1 });
  try {
    const { rows: counted } = await sql<{ n: number; distinct_ext: number }>`
      select count(*)::int as n, count(distinct external_id)::int as distinct_ext from passport
      where organization_id = ${t.organizationId} and livemode = false and external_id like 'crash-%'`.execute(
      db,
    );
    expect(counted[0]).toEqual({ n: 500, distinct_ext: 500 });
    const { rows: ids } = await sql<{ id: string; external_id: string }>`
      select id, external_id from passport where organization_id = ${t.organizationId}
        and livemode = false and external_id like 'crash-%'`.execute(db);
    const byExternal = new Map(ids.map((p) => [p.external_id, p.id]));
    for (const r of results) expect(byExternal.get(r.external_id)).toBe(r.passport_id);
  } finally {
    await db.destroy();
  }
  console.log(`imports crash test: kills ${JSON.stringify(kills)}, attempts ${job.attempts}`);
});
