// Measures the HTTP API of a running stack (`npm start`) as an integrator would use it:
// creates, reads and lists passports at a given concurrency and prints throughput and
// latency percentiles. Run by hand; nothing asserts on the figures.
//
//   node tools/bench/passports.mjs [--requests 2000] [--concurrency 16]
//
// Uses .dpp/credentials.json (base_url, organization_id, test_key) unless BASE_URL,
// ORGANIZATION_ID and API_KEY are set.
import fs from "node:fs";
import path from "node:path";
import { parseArgs } from "node:util";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const { values } = parseArgs({
  options: { requests: { type: "string", default: "2000" }, concurrency: { type: "string", default: "16" } },
});
const total = Number(values.requests);
const concurrency = Number(values.concurrency);

let creds = {};
try {
  creds = JSON.parse(fs.readFileSync(path.join(root, ".dpp", "credentials.json"), "utf8"));
} catch {
  // environment only
}
const baseUrl = process.env.BASE_URL ?? creds.base_url ?? "http://127.0.0.1:8080/v1";
const org = process.env.ORGANIZATION_ID ?? creds.organization_id;
const key = process.env.API_KEY ?? creds.test_key;
if (!org || !key) {
  console.error("No credentials: start the stack with `npm start`, or set ORGANIZATION_ID and API_KEY.");
  process.exit(2);
}
const headers = { authorization: `Bearer ${key}`, "content-type": "application/json" };
const run = `bench-${Date.now().toString(36)}`;

async function timed(fn) {
  const t0 = process.hrtime.bigint();
  const res = await fn();
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  return { ms, res };
}

async function phase(name, count, request) {
  const latencies = [];
  const statuses = new Map();
  let next = 0;
  const t0 = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: Math.min(concurrency, count) }, async () => {
      for (;;) {
        const i = next++;
        if (i >= count) return;
        const { ms, res } = await timed(() => request(i));
        await res.arrayBuffer();
        latencies.push(ms);
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      }
    }),
  );
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  latencies.sort((a, b) => a - b);
  const pct = (p) =>
    latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))].toFixed(1);
  console.log(
    `${name.padEnd(8)} ${String(count).padStart(6)} requests  ${(count / seconds).toFixed(0).padStart(6)} req/s  ` +
      `p50 ${pct(50)} ms  p95 ${pct(95)} ms  p99 ${pct(99)} ms  max ${latencies.at(-1).toFixed(1)} ms  ` +
      `statuses ${JSON.stringify(Object.fromEntries(statuses))}`,
  );
}

const ids = [];
console.log(`${baseUrl}  organization ${org}  concurrency ${concurrency}`);
await phase("create", total, async (i) => {
  const res = await fetch(`${baseUrl}/organizations/${org}/passports`, {
    method: "POST",
    headers: { ...headers, "idempotency-key": `${run}-${i}` },
    body: JSON.stringify({
      category: "textile",
      external_id: `${run}-${i}`,
      data: {
        product_name: `Bench T-shirt ${i}`,
        material_composition: [{ fiber: "cotton", percentage: 100 }],
      },
    }),
  });
  if (res.status === 201) {
    const body = await res.clone().json();
    ids.push(body.id);
  }
  return res;
});
await phase("get", total, (i) =>
  fetch(`${baseUrl}/organizations/${org}/passports/${ids[i % ids.length]}`, { headers }),
);
await phase("list", Math.ceil(total / 10), () =>
  fetch(`${baseUrl}/organizations/${org}/passports?limit=100`, { headers }),
);
await phase("events", Math.ceil(total / 10), () =>
  fetch(`${baseUrl}/organizations/${org}/events?limit=100`, { headers }),
);
