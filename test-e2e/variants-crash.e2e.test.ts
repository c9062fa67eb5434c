/**
 * GTIN claims and variant rows cannot drift apart when a process dies between the two steps (spec: Variants, one
 * GTIN namespace; docs/decisions/0051-variants-and-units.md, "Claims and rows"). A POST of 1000 variants with
 * GTINs, and a removal of 1000 GTINs, are sent while the variants-units process or the passport process is
 * SIGKILLed in the middle of the batch; each is started again. Then, with nothing else happening, every variant
 * claim in passport's claims table finds its variant row (same id, GTIN and passport) and every variant row finds
 * its claim: the orphans a kill leaves are repaired by the reconcilers by themselves (their intervals and grace are
 * shortened here; nothing in the test calls them).
 */
import { sql, type Kysely } from "kysely";
import { createDb } from "@dpp/kit/internal";
import { startHarness, type ApiResponse, type Harness, type Tenant } from "./support/harness";

jest.setTimeout(300_000);

let h: Harness;
let t: Tenant;
let db: Kysely<any>;

beforeAll(async () => {
  h = await startHarness("variants-crash", {
    env: {
      // The grace stays above a call's deadline (5 s): a create in flight is never taken for an orphan.
      GTIN_RECONCILE_INTERVAL_MS: "500",
      GTIN_RECONCILE_GRACE_MS: "6000",
      VARIANTS_RECONCILE_INTERVAL_MS: "500",
      VARIANTS_RECONCILE_GRACE_MS: "6000",
    },
  });
  t = await h.tenant("Crash variants", "pro");
  db = createDb<any>({ url: h.db.url, schema: "passport", applicationName: "variants-crash", max: 2 });
});
afterAll(async () => {
  await db?.destroy();
  await h?.close();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function gtin13(body: number): string {
  const digits = String(body).padStart(12, "0");
  let sum = 0;
  for (let i = 0; i < 12; i++) sum += Number(digits[11 - i]) * (i % 2 === 0 ? 3 : 1);
  return digits + String((10 - (sum % 10)) % 10);
}
let next = 500_000_000_000 + Math.floor(Math.random() * 1_000_000) * 10_000;
const batch = (n: number) =>
  Array.from({ length: n }, (_, i) => ({ gtin: gtin13(next++), size: `S${i}`, colour: "Black" }));

const base = () => `/organizations/${t.organizationId}/passports`;

async function draft(): Promise<string> {
  const res = await h.request(base(), { key: t.testKey, body: { category: "textile", data: {} } });
  h.expectStatus(res, 201);
  return res.body.id as string;
}

interface Pair {
  gtin: string;
  id: string;
  passport_id: string;
}

/** The tenant's variant claims (passport's table) and variant rows (variants-units' table). */
async function snapshot(): Promise<{ claims: Pair[]; rows: Pair[] }> {
  const { rows: claims } = await sql<Pair>`
    select gtin, owner_id as id, passport_id from passport.gtin_claim
    where organization_id = ${t.organizationId} and livemode = false and role = 'variant'`.execute(db);
  const { rows } = await sql<Pair>`
    select gtin, id, passport_id from variants_units.variant
    where organization_id = ${t.organizationId} and livemode = false`.execute(db);
  return { claims, rows };
}

const keyOf = (p: Pair) => `${p.gtin}|${p.id}|${p.passport_id}`;

function orphans(s: { claims: Pair[]; rows: Pair[] }) {
  const rows = new Set(s.rows.map(keyOf));
  const claims = new Set(s.claims.map(keyOf));
  return {
    claimsWithoutRow: s.claims.filter((c) => !rows.has(keyOf(c))).length,
    rowsWithoutClaim: s.rows.filter((r) => !claims.has(keyOf(r))).length,
  };
}

async function claimsOf(passportId: string): Promise<number> {
  const { rows } = await sql<{ n: number }>`
    select count(*)::int as n from passport.gtin_claim
    where organization_id = ${t.organizationId} and livemode = false and passport_id = ${passportId}`.execute(
    db,
  );
  return rows[0]!.n;
}

async function rowsOf(passportId: string): Promise<number> {
  const { rows } = await sql<{ n: number }>`
    select count(*)::int as n from variants_units.variant
    where organization_id = ${t.organizationId} and livemode = false and passport_id = ${passportId}`.execute(
    db,
  );
  return rows[0]!.n;
}

/** Resolves when `cond` holds (polled every few ms) or `ms` passed; answers whether it held. */
async function when(cond: () => Promise<boolean>, ms: number): Promise<boolean> {
  for (const end = Date.now() + ms; Date.now() < end;) {
    if (await cond()) return true;
    await sleep(3);
  }
  return false;
}

type Victim = "variants-units" | "passport";

/** Sends `send`, kills `victim` once `moment` holds (or after `fallbackMs`), starts it again; answers the status. */
async function killDuring(
  victim: Victim,
  send: () => Promise<ApiResponse>,
  moment: () => Promise<boolean>,
  fallbackMs: number,
): Promise<{ status: number; caught: boolean }> {
  let answered = false;
  const sent = send().then((res) => {
    answered = true;
    return res;
  });
  const caught = await when(async () => !answered && (await moment()), fallbackMs);
  await h.stack.killService(victim, "SIGKILL");
  const res = await sent;
  await sleep(200);
  await h.stack.startService(victim);
  return { status: res.status, caught };
}

it("SIGKILLs variants-units and passport mid-batch: every claim finds its variant and every variant its claim", async () => {
  const log: string[] = [];
  let orphansSeen = 0;
  const variantsUrl = (id: string) => `${base()}/${id}/variants`;

  // Warm-up: how long a 1000-variant POST takes here, to place the kills of passport inside one.
  const warm = await draft();
  const started = Date.now();
  h.expectStatus(
    await h.request(variantsUrl(warm), { key: t.testKey, body: { variants: batch(1000) } }),
    201,
  );
  const postMs = Date.now() - started;

  // 1. variants-units killed right after passport committed the batch's claims, before its rows are in.
  for (const keyed of [false, true]) {
    const id = await draft();
    const body = { variants: batch(1000) };
    const headers: Record<string, string> = keyed ? { "idempotency-key": `crash-${id}` } : {};
    const out = await killDuring(
      "variants-units",
      () => h.request(variantsUrl(id), { key: t.testKey, body, headers }),
      async () => (await claimsOf(id)) > 0,
      10_000,
    );
    const s = orphans(await snapshot());
    orphansSeen += s.claimsWithoutRow + s.rowsWithoutClaim;
    log.push(
      `variants-units killed (keyed ${keyed}): POST ${out.status}, caught ${out.caught}, ${JSON.stringify(s)}`,
    );
    if (keyed && out.status !== 201) {
      // The same key after the restart finishes the batch: the claims already made are not made twice. The key's
      // lease of the killed call lasts until its deadline: resource_busy until then, as a client is told.
      // Right after the restart the gateway may not have reconnected yet: upstream_unavailable, "retry shortly".
      let retry = await h.request(variantsUrl(id), { key: t.testKey, body, headers });
      const reconnecting = () =>
        retry.status === 500 && retry.body.error.details?.reason === "upstream_unavailable";
      for (const end = Date.now() + 20_000; (retry.status === 409 || reconnecting()) && Date.now() < end;) {
        if (retry.status === 409) expect(retry.body.error.code).toBe("resource_busy");
        await sleep(reconnecting() ? 200 : Number(retry.headers.get("retry-after") ?? "1") * 1000);
        retry = await h.request(variantsUrl(id), { key: t.testKey, body, headers });
      }
      h.expectStatus(retry, 201);
      expect(retry.body.data).toHaveLength(1000);
    }
  }

  // 2. passport killed while it claims the batch (at several points of a POST's usual duration).
  for (const at of [0.2, 0.5, 0.8]) {
    const id = await draft();
    const t0 = Date.now();
    const out = await killDuring(
      "passport",
      () => h.request(variantsUrl(id), { key: t.testKey, body: { variants: batch(1000) } }),
      async () => Date.now() - t0 >= postMs * at,
      10_000,
    );
    const s = orphans(await snapshot());
    orphansSeen += s.claimsWithoutRow + s.rowsWithoutClaim;
    log.push(`passport killed at ${at}: POST ${out.status}, ${JSON.stringify(s)}`);
  }

  // 3. variants-units killed during a removal of 1000 GTINs, once a first batch of rows is deleted.
  {
    const id = await draft();
    // Passport was just restarted: the gateway may still be reconnecting to it, and answers 500
    // upstream_unavailable ("retry shortly") until it has; the same Idempotency-Key makes the retry safe.
    const body = { variants: batch(1000) };
    const key = `setup-removal-${id}`;
    let added = await h.request(variantsUrl(id), {
      key: t.testKey,
      body,
      headers: { "idempotency-key": key },
    });
    for (
      let i = 0;
      i < 50 && added.status === 500 && added.body?.error?.details?.reason === "upstream_unavailable";
      i++
    ) {
      await new Promise((r) => setTimeout(r, 200));
      added = await h.request(variantsUrl(id), { key: t.testKey, body, headers: { "idempotency-key": key } });
    }
    h.expectStatus(added, 201);
    const gtins = (added.body.data as { gtin: string }[]).map((v) => v.gtin);
    const out = await killDuring(
      "variants-units",
      () => h.request(`${variantsUrl(id)}/remove`, { key: t.testKey, body: { gtins } }),
      async () => (await rowsOf(id)) < 1000,
      10_000,
    );
    const s = orphans(await snapshot());
    orphansSeen += s.claimsWithoutRow + s.rowsWithoutClaim;
    log.push(`variants-units killed in a removal: ${out.status}, caught ${out.caught}, ${JSON.stringify(s)}`);
  }

  // The reconcilers repair what the kills left, by themselves.
  let last = orphans(await snapshot());
  const end = Date.now() + 90_000;
  while ((last.claimsWithoutRow || last.rowsWithoutClaim) && Date.now() < end) {
    await sleep(250);
    last = orphans(await snapshot());
  }
  const final = await snapshot();
  console.log(
    `variants crash test: POST of 1000 in ${postMs} ms; ${log.join("; ")}; orphans seen ${orphansSeen}; ` +
      `finally ${final.claims.length} claims, ${final.rows.length} rows`,
  );
  expect(last).toEqual({ claimsWithoutRow: 0, rowsWithoutClaim: 0 });
  expect(final.claims.map(keyOf).sort()).toEqual(final.rows.map(keyOf).sort());
  // The kills did leave orphans for the reconcilers to repair (else this test would show nothing).
  expect(orphansSeen).toBeGreaterThan(0);
  // The batches that were answered 201 are all there (the warm-up's 1000 rows at least).
  expect(final.rows.length).toBeGreaterThanOrEqual(1000);
});
