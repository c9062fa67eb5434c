/**
 * What compressing an answer costs the gateway (docs/performance.md, "Compression"). Prints figures; asserts
 * nothing.
 *
 * 1. The gateway's own `compressAnswer` on answers rendered by its own mapping: a passport as the benchmark creates
 *    it, a textile passport with every field required to publish, the same with a 600-character description, and
 *    list pages of 20 and 100 such passports. For each: the bytes as they are, and per encoding the bytes and the
 *    CPU microseconds of one call (the mean of `--iterations` calls, after as many to warm up).
 * 2. With `--stack`: the whole stack on a fresh database (the e2e harness's Postgres), one key, one passport with
 *    a description; `--requests` GETs of it on one keep-alive connection without Accept-Encoding, with `gzip` and
 *    with `br`, in that order, twice: the gateway process's CPU milliseconds per GET, the body bytes on the wire
 *    and the mean time to the last byte.
 *
 *   node --import tsx tools/bench/src/compression.ts
 *   node --import tsx tools/bench/src/compression.ts --iterations 5000 --stack --requests 2000
 */
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { createDb } from "@dpp/kit/internal";
import { createTestDatabase } from "@dpp/kit/testing";
import {
  Admin,
  compressAnswer,
  GATEWAY_SCHEMA,
  IdentityRepository,
  passportJson,
  type GatewayDB,
} from "@dpp/gateway";
import { migrateAll, startStack } from "@dpp/stack";
import { createBody, publishableBody } from "./cases";
import { processCpuMs } from "./procstat";

const { values: args } = parseArgs({
  options: {
    iterations: { type: "string", default: "2000" },
    stack: { type: "boolean", default: false },
    requests: { type: "string", default: "2000" },
  },
});
const iterations = Number(args.iterations);
const requests = Number(args.requests);

const DESCRIPTION = "A plain T-shirt of organic cotton, knitted and sewn in Portugal, dyed without azo dyes. "
  .repeat(7)
  .trim();
const fullBody = (n: number) => {
  const body = publishableBody("cmp", n, 400);
  return { ...body, data: { ...(body.data as object), product_description: DESCRIPTION } };
};

type PassportMessage = Parameters<typeof passportJson>[0];

/** A passport answer as the gateway renders it (its own mapping), for the create body `body`, as a draft. */
function answerOf(body: Record<string, unknown>, n: number): Record<string, unknown> {
  const at = { seconds: BigInt(Date.parse("2026-08-01T12:00:00.000Z") / 1000), nanos: 0 };
  const message = {
    id: `pp_01J${String(n).padStart(23, "0")}`,
    organizationId: "org_01JABCDEFGHJKMNPQRSTVWXYZ0",
    category: String(body.category),
    status: 1, // draft
    version: 1,
    livemode: false,
    externalId: String(body.external_id),
    gtin: (body.data as { gtin?: string }).gtin,
    createdAt: at,
    updatedAt: at,
    dataJson: JSON.stringify(body.data),
  } as unknown as PassportMessage;
  return passportJson(message) as Record<string, unknown>;
}

const page = (n: number) =>
  JSON.stringify({
    object: "list",
    data: Array.from({ length: n }, (_, i) => answerOf(fullBody(i), i)),
    has_more: true,
    next_cursor: "c".repeat(43),
  });

const ANSWERS: [string, string][] = [
  ["passport, the benchmark's create body", JSON.stringify(answerOf(createBody("cmp", 1), 1))],
  ["passport, every field to publish", JSON.stringify(answerOf(publishableBody("cmp", 1, 400), 1))],
  ["the same with a 600-character description", JSON.stringify(answerOf(fullBody(1), 1))],
  ["list page of 20 of those", page(20)],
  ["list page of 100 of those", page(100)],
];

function cpuMicrosPerCall(run: () => unknown): number {
  for (let i = 0; i < iterations; i++) run();
  const before = process.cpuUsage();
  for (let i = 0; i < iterations; i++) run();
  const used = process.cpuUsage(before);
  return (used.user + used.system) / iterations;
}

function measureFunction(): void {
  console.log(`compressAnswer, the mean of ${iterations} calls (CPU µs per call):`);
  console.log(
    "answer                                          bytes   gzip bytes  gzip µs   br bytes    br µs",
  );
  for (const [name, text] of ANSWERS) {
    const length = Buffer.byteLength(text);
    const cells = (["gzip", "br"] as const).map((accept) => {
      const once = compressAnswer(text, length, accept);
      if (!once) return ["as is", "-"];
      return [
        String(once.bytes.length),
        cpuMicrosPerCall(() => compressAnswer(text, length, accept)).toFixed(1),
      ];
    });
    console.log(
      `${name.padEnd(44)} ${String(length).padStart(7)} ${cells
        .map(([bytes, us]) => `${bytes!.padStart(12)} ${us!.padStart(8)}`)
        .join("  ")}`,
    );
  }
  const noHeader = cpuMicrosPerCall(() => compressAnswer(ANSWERS[2]![1], 1500, undefined));
  console.log(`a request without Accept-Encoding: ${noHeader.toFixed(3)} µs per answer (nothing compressed)`);
}

interface Loop {
  cpuMsPerRequest: number;
  bodyBytes: number;
  msPerRequest: number;
}

/** `n` GETs of `path` on one keep-alive connection; the gateway's CPU over them. */
async function loop(base: URL, path: string, headers: Record<string, string>, n: number, gatewayPid: number) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const get = () =>
    new Promise<number>((resolve, reject) => {
      const req = http.request({ agent, host: base.hostname, port: base.port, path, headers }, (res) => {
        let bytes = 0;
        res.on("data", (c: Buffer) => (bytes += c.length));
        res.on("end", () =>
          res.statusCode === 200 ? resolve(bytes) : reject(new Error(`${res.statusCode}`)),
        );
      });
      req.on("error", reject);
      req.end();
    });
  const cpu = processCpuMs(gatewayPid);
  const started = performance.now();
  let bytes = 0;
  for (let i = 0; i < n; i++) bytes = await get();
  const result: Loop = {
    cpuMsPerRequest: (processCpuMs(gatewayPid) - cpu) / n,
    bodyBytes: bytes,
    msPerRequest: (performance.now() - started) / n,
  };
  agent.destroy();
  return result;
}

async function measureStack(): Promise<void> {
  const db = await createTestDatabase("bench_compression");
  const logDir = path.join(os.tmpdir(), `dpp-bench-compression-${process.pid}`);
  await migrateAll(db.url, logDir);
  const stack = await startStack({
    hosting: "process",
    databaseUrl: db.url,
    logDir,
    logLevel: "warn",
    env: { RATE_LIMIT_PER_KEY_PER_MINUTE: "1000000" },
  });
  const gatewayDb = createDb<GatewayDB>({
    url: db.url,
    schema: GATEWAY_SCHEMA,
    applicationName: "bench",
    max: 1,
  });
  try {
    const admin = new Admin(new IdentityRepository(gatewayDb));
    const org = await admin.createOrganization("Bench", "pro", "active");
    const key = (await admin.createKey({ organizationId: org.id, livemode: false })).key;
    const auth = { authorization: `Bearer ${key}` };
    const created = await fetch(`${stack.baseUrl}/organizations/${org.id}/passports`, {
      method: "POST",
      headers: { ...auth, "content-type": "application/json" },
      body: JSON.stringify(fullBody(1)),
    });
    if (created.status !== 201) throw new Error(`create: ${created.status} ${await created.text()}`);
    const { id } = (await created.json()) as { id: string };
    const base = new URL(stack.baseUrl);
    const target = `${base.pathname}/organizations/${org.id}/passports/${id}`;
    const pid = stack.services.gateway.process.pid!;
    const modes: [string, Record<string, string>][] = [
      ["no Accept-Encoding", auth],
      ["Accept-Encoding: gzip", { ...auth, "accept-encoding": "gzip" }],
      ["Accept-Encoding: br", { ...auth, "accept-encoding": "br" }],
    ];
    for (const [, headers] of modes) await loop(base, target, headers, Math.min(500, requests), pid);
    console.log(`\nGET of one passport through the stack, ${requests} requests per row, one connection:`);
    console.log("mode                       gateway CPU ms/GET   body bytes   ms/GET");
    for (let round = 0; round < 2; round++)
      for (const [name, headers] of modes) {
        const r = await loop(base, target, headers, requests, pid);
        console.log(
          `${name.padEnd(26)} ${r.cpuMsPerRequest.toFixed(3).padStart(19)} ${String(r.bodyBytes).padStart(12)} ${r.msPerRequest.toFixed(3).padStart(8)}`,
        );
      }
  } finally {
    await stack.stop();
    await gatewayDb.destroy();
    await db.drop();
  }
}

async function main() {
  measureFunction();
  if (args.stack) await measureStack();
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
