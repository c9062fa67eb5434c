/**
 * The variant batch cases: a POST .../variants of 1000 variants with GTINs, and a POST .../variants/remove of
 * those 1000 GTINs, each timed as an integrator sees it (request sent to answer read), one at a time, on the full
 * system and on the reference, interleaved (reference, full, reference, full, ...). The reference is the same
 * shape at its least: one HTTP request, ONE grpc-js call, ONE multi-row statement of the 1000 rows (an INSERT;
 * a DELETE for the removal). The full system validates the batch, claims the GTINs at passport (one call), inserts
 * the rows with their events, and for the removal deletes and releases them in batches. Printed, never asserted.
 */
import { median } from "./stats";
import { fmt } from "./stats";
import type { Target } from "./cases";

export interface VariantFigures {
  size: number;
  post: { full: number[]; ref: number[] };
  remove: { full: number[]; ref: number[] };
}

/** A valid GTIN-13 from a 12-digit body: the GS1 check digit appended. */
function gtin13(body: number): string {
  const digits = String(body).padStart(12, "0");
  let sum = 0;
  for (let i = 0; i < 12; i++) sum += Number(digits[11 - i]) * (i % 2 === 0 ? 3 : 1);
  return digits + String((10 - (sum % 10)) % 10);
}

async function timed(
  target: Target,
  path: string,
  body: unknown,
  expect: number,
): Promise<{ ms: number; json: unknown }> {
  const t0 = performance.now();
  const res = await fetch(`${target.baseUrl}/organizations/${target.organization}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${target.key}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const json = (await res.json()) as unknown;
  const ms = performance.now() - t0;
  if (res.status !== expect)
    throw new Error(`POST ${path} answered ${res.status}: ${JSON.stringify(json).slice(0, 500)}`);
  return { ms, json };
}

/** A textile draft on the full system (the reference takes any passport id). */
async function draft(full: Target): Promise<string> {
  const res = await fetch(`${full.baseUrl}/organizations/${full.organization}/passports`, {
    method: "POST",
    headers: { authorization: `Bearer ${full.key}`, "content-type": "application/json" },
    body: JSON.stringify({ category: "textile", data: { product_name: "Variant bench" } }),
  });
  const body = (await res.json()) as { id: string };
  if (res.status !== 201) throw new Error(`passport create answered ${res.status}`);
  return body.id;
}

/** Fresh variants with GTINs from `next` on (a counter the caller keeps across batches). */
function freshVariants(size: number, next: { n: number }) {
  return Array.from({ length: size }, (_, n) => ({ gtin: gtin13(next.n++), size: `S${n}`, colour: "Black" }));
}

/** The first GTIN body of a run: far from every other run's. */
const firstGtin = () => ({ n: 600_000_000_000 + Math.floor(Math.random() * 1_000_000) * 100_000 });

/** One batch's POST, timed. */
function postBatch(target: Target, passportId: string, variants: ReturnType<typeof freshVariants>) {
  return timed(target, `/passports/${passportId}/variants`, { variants }, 201);
}

/** One batch's removal, timed; throws unless every GTIN was removed. */
async function removeBatch(
  target: Target,
  passportId: string,
  variants: ReturnType<typeof freshVariants>,
): Promise<number> {
  const removal = await timed(
    target,
    `/passports/${passportId}/variants/remove`,
    { gtins: variants.map((v) => v.gtin) },
    200,
  );
  if ((removal.json as { removed: string[] }).removed.length !== variants.length)
    throw new Error(`the removal removed ${JSON.stringify(removal.json).slice(0, 200)}`);
  return removal.ms;
}

export async function benchVariants(
  targets: { full: Target; ref: Target },
  rounds: number,
  warmup: number,
  size = 1000,
  log: (line: string) => void = () => undefined,
): Promise<VariantFigures> {
  const passports = { full: await draft(targets.full), ref: "ref_variants_bench" };
  const next = firstGtin();
  const out: VariantFigures = { size, post: { full: [], ref: [] }, remove: { full: [], ref: [] } };
  // Warm-up rounds first (not kept), then the measured ones.
  for (let i = 0; i < warmup + rounds; i++)
    for (const side of ["ref", "full"] as const) {
      const variants = freshVariants(size, next);
      const post = await postBatch(targets[side], passports[side], variants);
      const removalMs = await removeBatch(targets[side], passports[side], variants);
      if (i < warmup) continue;
      out.post[side].push(post.ms);
      out.remove[side].push(removalMs);
      log(`  variants ${side} round ${i - warmup + 1}: POST ${fmt(post.ms)} ms, remove ${fmt(removalMs)} ms`);
    }
  return out;
}

/**
 * The variant batches under the profiler (--profile): `rounds` POSTs of `size` variants on the full system, then
 * their removals, each kind one profiled span (`profiled` starts the profilers and Postgres' statement counts
 * before `work` and reads them after it). Warmed up by one POST and its removal first.
 */
export async function profileVariants(
  full: Target,
  rounds: number,
  size: number,
  profiled: (label: string, requests: number, work: () => Promise<void>) => Promise<void>,
): Promise<void> {
  const next = firstGtin();
  const warmId = await draft(full);
  const warm = freshVariants(size, next);
  await postBatch(full, warmId, warm);
  await removeBatch(full, warmId, warm);
  // A passport per batch: the batches are all stored before the first removal (pairs and the limit are per passport).
  const batches: { passportId: string; variants: ReturnType<typeof freshVariants> }[] = [];
  for (let i = 0; i < rounds; i++)
    batches.push({ passportId: await draft(full), variants: freshVariants(size, next) });
  await profiled(`POST .../variants (${size}), one at a time`, rounds, async () => {
    for (const b of batches) await postBatch(full, b.passportId, b.variants);
  });
  await profiled(`POST .../variants/remove (${size}), one at a time`, rounds, async () => {
    for (const b of batches) await removeBatch(full, b.passportId, b.variants);
  });
}

export function variantsTable(f: VariantFigures): string[] {
  const row = (name: string, xs: { full: number[]; ref: number[] }) => {
    const full = median(xs.full);
    const ref = median(xs.ref);
    return `${name.padEnd(34)}${fmt(ref).padStart(10)}${fmt(full).padStart(10)}${(ref / full).toFixed(2).padStart(10)}`;
  };
  return [
    `variant batches of ${f.size}, one at a time, ${f.post.full.length} round(s) per side interleaved; medians in ms`,
    `${"".padEnd(34)}${"ref ms".padStart(10)}${"full ms".padStart(10)}${"full/ref".padStart(10)}`,
    row(`POST .../variants (${f.size})`, f.post),
    row(`POST .../variants/remove (${f.size})`, f.remove),
    `reference: one HTTP request, one grpc-js call, one multi-row statement of the ${f.size} rows; full/ref is the`,
    `reference's time over the full system's. Target: full under 300 ms, full/ref at least 0.5 (printed, not asserted)`,
  ];
}
