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

export async function benchVariants(
  targets: { full: Target; ref: Target },
  rounds: number,
  warmup: number,
  size = 1000,
  log: (line: string) => void = () => undefined,
): Promise<VariantFigures> {
  const passports = { full: await draft(targets.full), ref: "ref_variants_bench" };
  let next = 600_000_000_000 + Math.floor(Math.random() * 1_000_000) * 100_000;
  const out: VariantFigures = { size, post: { full: [], ref: [] }, remove: { full: [], ref: [] } };
  // Warm-up rounds first (not kept), then the measured ones.
  for (let i = 0; i < warmup + rounds; i++)
    for (const side of ["ref", "full"] as const) {
      const variants = Array.from({ length: size }, (_, n) => ({
        gtin: gtin13(next++),
        size: `S${n}`,
        colour: "Black",
      }));
      const path = `/passports/${passports[side]}/variants`;
      const post = await timed(targets[side], path, { variants }, 201);
      const removal = await timed(
        targets[side],
        `${path}/remove`,
        { gtins: variants.map((v) => v.gtin) },
        200,
      );
      if ((removal.json as { removed: string[] }).removed.length !== size)
        throw new Error(`${side}: the removal removed ${JSON.stringify(removal.json).slice(0, 200)}`);
      if (i < warmup) continue;
      out.post[side].push(post.ms);
      out.remove[side].push(removal.ms);
      log(
        `  variants ${side} round ${i - warmup + 1}: POST ${fmt(post.ms)} ms, remove ${fmt(removal.ms)} ms`,
      );
    }
  return out;
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
