/**
 * `npm run bench`: the whole system and a thin reference stack (tools/bench/reference) against one embedded
 * Postgres, measured side by side in interleaved rounds (reference, full, reference, full, ...) so that both
 * see the same machine. Prints figures; asserts nothing. Method and columns: tools/bench/README.md.
 */
import { createHash } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import type { ChildProcess } from "node:child_process";
import pg from "pg";
import { createDb } from "@dpp/kit/internal";
import { Admin, GATEWAY_SCHEMA, IdentityRepository, type GatewayDB } from "@dpp/gateway";
import { freePort, migrateAll, startStack, type Stack } from "@dpp/stack";
import { ensureDemoCredentials } from "@dpp/stack/demo";
import { startEmbeddedPostgres, type LocalPostgres } from "@dpp/stack/embedded-postgres";
import {
  BROWSER_HEADERS,
  CASES,
  createBody,
  PUBLIC_CASES,
  publishableBody,
  type CaseName,
  type Target,
} from "./cases";
import type { LagResult, LoadCommand, RunResult } from "./loadgen";
import {
  bundleEntries,
  NODE_FLAGS,
  REPO_ROOT,
  startBundle,
  startNodeProcess,
  stopProcess,
  type NodeFlags,
} from "./node-process";
import { processCpuMs, treeCpuMs } from "./procstat";
import { ProfileFile } from "./profile";
import { benchDocumentUpload, uploadTable } from "./documents";
import { benchVariants, profileVariants, variantsTable, type VariantFigures } from "./variants";
import { fmt, median, percentile, table } from "./stats";
import { REFERENCE_DDL, REFERENCE_SCHEMA } from "../reference/schema";

const USAGE = `npm run bench -- [--rounds 3] [--seconds 10] [--connections 16] [--cases get,list,...]
                     [--settle 10.5] [--prefill 2000] [--warmup 3] [--rewarm 2]
                     [--lag-rates 150,200] [--lag-seconds 10] [--webhook-rates 200]
                     [--node-flags local|image] [--uploads 10] [--quick] [--profile]
                     [--import-rounds 3] [--import-rows 500] [--variant-rounds 5]
                     [--public-passports 200] [--page-rate 200]
cases: ${CASES.join(", ")}`;

const { values: args } = parseArgs({
  options: {
    rounds: { type: "string" },
    seconds: { type: "string" },
    connections: { type: "string" },
    cases: { type: "string" },
    settle: { type: "string" },
    prefill: { type: "string" },
    warmup: { type: "string" },
    rewarm: { type: "string" },
    "lag-rates": { type: "string" },
    "lag-seconds": { type: "string" },
    "webhook-rates": { type: "string" },
    "node-flags": { type: "string" },
    "import-rounds": { type: "string" },
    "import-rows": { type: "string" },
    "variant-rounds": { type: "string" },
    uploads: { type: "string" },
    "public-passports": { type: "string" },
    "page-rate": { type: "string" },
    quick: { type: "boolean", default: false },
    profile: { type: "boolean", default: false },
    help: { type: "boolean", default: false },
  },
});
if (args.help) {
  console.log(USAGE);
  process.exit(0);
}
const quick = args.quick!;
const num = (v: string | undefined, normal: number, short: number) =>
  v !== undefined ? Number(v) : quick ? short : normal;
const opts = {
  rounds: num(args.rounds, 3, 1),
  seconds: num(args.seconds, 10, 2),
  connections: num(args.connections, 16, 8),
  // Postgres publishes a backend's counters at most once a second, and an idle backend's last ones after 10 s:
  // the transaction count of a round is complete only 10 s after its last request.
  settle: num(args.settle, 10.5, 1.5),
  prefill: num(args.prefill, 2000, 200),
  lagSeconds: num(args["lag-seconds"], 10, 2),
  warmup: num(args.warmup, 3, 1),
  // Seconds of the same case on the same side right before each measured round (and each feed-lag rate), not
  // measured: after the idle time between rounds, V8 has dropped much of a process's optimized code (its memory
  // reducer runs when a process goes quiet), and a round would otherwise pay for compiling it again.
  rewarm: num(args.rewarm, 2, 1),
  idleSeconds: quick ? 2 : 10,
  // A job of import-rows rows from POST to completed, beside the same number of creates on 16 connections.
  importRounds: num(args["import-rounds"], 3, 1),
  importRows: num(args["import-rows"], 500, 500),
  // A POST of 1000 variants and the removal of their 1000 GTINs, beside the reference's; 0: none.
  variantRounds: num(args["variant-rounds"], 5, 1),
  lagRates: (args["lag-rates"] ?? (quick ? "50" : "150,200")).split(",").filter(Boolean).map(Number),
  // Webhook delivery lag: creates at each rate for lag-seconds, delivered to one endpoint on loopback.
  webhookRates: (args["webhook-rates"] ?? (quick ? "50" : "200")).split(",").filter(Boolean).map(Number),
  cases: (args.cases ?? CASES.join(",")).split(",").filter(Boolean) as CaseName[],
  profile: args.profile!,
  // Document uploads (1 MB, filesystem store) timed from POST to ready; 0: none.
  uploads: num(args.uploads, 10, 3),
  nodeFlags: (args["node-flags"] ?? "local") as NodeFlags,
  // Live passports published for the public cases (resolve, page), and the page's fixed rate.
  publicPassports: num(args["public-passports"], 200, 20),
  pageRate: num(args["page-rate"], 200, 200),
};
if (!Object.hasOwn(NODE_FLAGS, opts.nodeFlags)) {
  console.error(`Unknown --node-flags ${opts.nodeFlags}: local or image.\n${USAGE}`);
  process.exit(2);
}
for (const c of opts.cases)
  if (!CASES.includes(c)) {
    console.error(`Unknown case ${c}.\n${USAGE}`);
    process.exit(2);
  }
for (const [k, v] of Object.entries(opts))
  if (typeof v === "number" && !(v >= 0)) {
    console.error(`--${k} must be a number.\n${USAGE}`);
    process.exit(2);
  }

const BENCH_DIR = path.join(REPO_ROOT, ".dpp", "bench");
const RUN_DIR = path.join(BENCH_DIR, `run-${process.pid}`);
const PROFILE_RUN_DIR = path.join(BENCH_DIR, "profiles", new Date().toISOString().replace(/[:.]/g, "-"));
const log = (line: string) => process.stderr.write(`[bench] ${line}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const nowNs = () => process.hrtime.bigint();

/** Run directories of runs that are gone (killed before they could clean up). */
function removeStaleRuns() {
  if (!fs.existsSync(BENCH_DIR)) return;
  for (const name of fs.readdirSync(BENCH_DIR)) {
    const m = /^run-(\d+)$/.exec(name);
    if (!m) continue;
    let alive = true;
    try {
      process.kill(Number(m[1]), 0);
    } catch {
      alive = false;
    }
    if (!alive) fs.rmSync(path.join(BENCH_DIR, name), { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Processes

interface Running {
  pg?: LocalPostgres;
  stack?: Stack<"process">;
  refService?: ChildProcess;
  refEdge?: ChildProcess;
  refPublic?: ChildProcess;
  loadgen?: ChildProcess;
  stats?: pg.Client;
}
const running: Running = {};
let cleaning: Promise<void> | undefined;

function cleanup(): Promise<void> {
  cleaning ??= (async () => {
    await running.stats?.end().catch(() => undefined);
    await stopProcess(running.loadgen);
    await stopProcess(running.refEdge);
    await stopProcess(running.refPublic);
    await stopProcess(running.refService);
    await running.stack?.stop().catch((e: unknown) => log(`stopping the stack: ${String(e)}`));
    await running.pg?.stop().catch((e: unknown) => log(`stopping Postgres: ${String(e)}`));
    if (!process.env.BENCH_KEEP) fs.rmSync(RUN_DIR, { recursive: true, force: true });
  })();
  return cleaning;
}
for (const sig of ["SIGINT", "SIGTERM"] as const)
  process.on(sig, () => {
    log(`${sig}: stopping everything`);
    void cleanup().then(() => process.exit(130));
  });

/** The load generator: a process of its own, driven by messages. */
class LoadGenerator {
  private next = 1;
  private readonly waiting = new Map<number, { resolve: (v: any) => void; reject: (e: Error) => void }>();
  constructor(readonly child: ChildProcess) {
    child.on("message", (m: { id: number; result?: unknown; error?: string }) => {
      const w = this.waiting.get(m.id);
      this.waiting.delete(m.id);
      if (m.error !== undefined) w?.reject(new Error(m.error));
      else w?.resolve(m.result);
    });
    child.on("exit", (code) => {
      for (const w of this.waiting.values()) w.reject(new Error(`load generator exited (${code})`));
      this.waiting.clear();
    });
  }
  send<T>(command: LoadCommand): Promise<T> {
    const id = this.next++;
    return new Promise<T>((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      this.child.send({ id, command });
    });
  }
}

async function waitHttp(url: string, child: ChildProcess, what: string) {
  const until = Date.now() + 30000;
  while (Date.now() < until) {
    if (child.exitCode !== null) throw new Error(`${what} exited (${child.exitCode}) while starting`);
    const ok = await fetch(url, { signal: AbortSignal.timeout(1000) }).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return;
    await sleep(100);
  }
  throw new Error(`${what} did not answer ${url} within 30 s`);
}

function logTo(child: ChildProcess, name: string) {
  const out = fs.createWriteStream(path.join(RUN_DIR, "logs", `${name}.log`), { flags: "a" });
  child.stdout?.pipe(out);
  child.stderr?.pipe(out);
}

// ---------------------------------------------------------------------------------------------------------------
// Measuring

type Side = "ref" | "full";
const SIDES: Side[] = ["ref", "full"];
const PROCESSES = [
  "gateway",
  "passport",
  "events",
  "public",
  "ref-edge",
  "ref-svc",
  "ref-public",
  "postgres",
  "loadgen",
] as const;
type ProcessName = (typeof PROCESSES)[number];
/** Shown on both sides' rows and in neither side's total: the load generator is no side's. */
const SHARED_PROCESSES: ProcessName[] = ["loadgen"];
const SIDE_PROCESSES: Record<Side, ProcessName[]> = {
  ref: ["ref-edge", "ref-svc", "ref-public", "postgres"],
  full: ["gateway", "passport", "events", "public", "postgres"],
};

interface Snapshot {
  at: bigint;
  cpu: Record<ProcessName, number>;
  xact: number;
}

let postmasterPid = 0;
function cpuNow(): Record<ProcessName, number> {
  const pidOf = (c: ChildProcess | undefined) => c?.pid ?? 0;
  return {
    gateway: processCpuMs(pidOf(running.stack?.services.gateway.process)),
    passport: processCpuMs(pidOf(running.stack?.services.passport.process)),
    events: processCpuMs(pidOf(running.stack?.services.events.process)),
    public: processCpuMs(pidOf(running.stack?.services["public-surface"].process)),
    "ref-edge": processCpuMs(pidOf(running.refEdge)),
    "ref-svc": processCpuMs(pidOf(running.refService)),
    "ref-public": processCpuMs(pidOf(running.refPublic)),
    postgres: treeCpuMs(postmasterPid),
    loadgen: processCpuMs(pidOf(running.loadgen)),
  };
}

/** Each snapshot commits exactly two transactions of its own (the flush request and the read). */
const OWN_XACTS_PER_SNAPSHOT = 2;
async function snapshot(): Promise<Snapshot> {
  const c = running.stats!;
  // Publishes this connection's own counters first, so the read below counts everything it did before.
  await c.query("select pg_stat_force_next_flush()");
  const { rows } = await c.query<{ xact_commit: string }>(
    "select xact_commit from pg_stat_database where datname = current_database()",
  );
  return { at: nowNs(), cpu: cpuNow(), xact: Number(rows[0]!.xact_commit) };
}

interface Idle {
  cpuPerSec: Record<ProcessName, number>;
  xactPerSec: number;
}
let idle: Idle = { cpuPerSec: Object.fromEntries(PROCESSES.map((p) => [p, 0])) as any, xactPerSec: 0 };

async function measureIdle(seconds: number): Promise<Idle> {
  const a = await snapshot();
  await sleep(seconds * 1000);
  const b = await snapshot();
  const s = Number(b.at - a.at) / 1e9;
  return {
    cpuPerSec: Object.fromEntries(PROCESSES.map((p) => [p, (b.cpu[p] - a.cpu[p]) / s])) as any,
    xactPerSec: (b.xact - a.xact - OWN_XACTS_PER_SNAPSHOT) / s,
  };
}

interface RoundFigures {
  rps: number;
  p50: number;
  p99: number;
  other: number;
  cpuPerReq: Record<ProcessName, number>;
  xactPerReq: number;
  exhausted: boolean;
  firstError?: string;
}

/**
 * The figures of a round: CPU between `a` and `b` (from the round's start to the end of its settle time) per request
 * of the round; transactions between `rewarm.from` (before the round's re-warm-up, when there was one) and `b` per
 * request of both, so that the re-warm-up's transactions that Postgres publishes late are counted with its requests.
 */
function figures(
  r: RunResult,
  a: Snapshot,
  b: Snapshot,
  rewarm?: { from: Snapshot; ok: number },
): RoundFigures {
  const seconds = (from: Snapshot) => Number(b.at - from.at) / 1e9;
  const per = (x: number, requests = r.ok) => (requests > 0 ? x / requests : NaN);
  // The window of the transactions holds the runner's own readings at its start and, after a re-warm-up, at the
  // round's start.
  const from = rewarm?.from ?? a;
  const own = OWN_XACTS_PER_SNAPSHOT * (rewarm ? 2 : 1);
  return {
    rps: r.ok / r.seconds,
    p50: r.p50,
    p99: r.p99,
    other: Object.values(r.other).reduce((s, x) => s + x, 0),
    cpuPerReq: Object.fromEntries(
      PROCESSES.map((p) => [p, per(b.cpu[p] - a.cpu[p] - idle.cpuPerSec[p] * seconds(a))]),
    ) as Record<ProcessName, number>,
    xactPerReq: per(b.xact - from.xact - own - idle.xactPerSec * seconds(from), r.ok + (rewarm?.ok ?? 0)),
    exhausted: r.exhausted,
    firstError: r.firstError,
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Data

/**
 * The demo organization is on the Pro plan, whose 1,000 publish slots the publish case would use up within a
 * few rounds (the slots count test passports too): the benchmark's organization gets the Scale plan.
 */
async function unlimitedPublishing(databaseUrl: string, organizationId: string) {
  const db = createDb<GatewayDB>({
    url: databaseUrl,
    schema: GATEWAY_SCHEMA,
    applicationName: "bench-setup",
    max: 1,
  });
  try {
    await new Admin(new IdentityRepository(db)).setPlan(organizationId, "scale", "active");
  } finally {
    await db.destroy();
  }
}

let gtinCounter = 0;
const GTIN_PREFIX = 400 + (process.pid % 500);
/** The live passports of the public cases: GTINs of their own (another mode than the drafts anyway). */
const PUBLIC_GTIN_PREFIX = 900 + (process.pid % 90);

/** Items of the reference: the same bodies the full system got, inserted directly (no request is measured). */
async function referenceInsert(
  c: pg.Client,
  org: string,
  bodies: Record<string, unknown>[],
): Promise<string[]> {
  const ids = bodies.map((_, i) => `ref_${process.pid.toString(36)}_${Date.now().toString(36)}_${i}`);
  for (let i = 0; i < bodies.length; i += 500) {
    const chunk = bodies.slice(i, i + 500);
    await c.query(
      `insert into ${REFERENCE_SCHEMA}.items (id, organization_id, livemode, category, external_id, gtin, data)
       select id, $2, false, b->>'category', b->>'external_id', b->'data'->>'gtin', b->'data'
       from unnest($1::text[], $3::jsonb[]) as t(id, b)`,
      [ids.slice(i, i + chunk.length), org, chunk.map((b) => JSON.stringify(b))],
    );
  }
  return ids;
}

async function feedLength(target: Target): Promise<{ count: number; sample?: unknown }> {
  let cursor: string | undefined;
  let count = 0;
  let sample: unknown;
  for (;;) {
    const q = cursor ? `&cursor=${encodeURIComponent(cursor)}` : "";
    const res = await fetch(`${target.baseUrl}/organizations/${target.organization}/events?limit=100${q}`, {
      headers: { authorization: `Bearer ${target.key}` },
    });
    if (!res.ok) throw new Error(`feed read: ${res.status} ${await res.text()}`);
    const page = (await res.json()) as { data: unknown[]; has_more: boolean; next_cursor: string | null };
    count += page.data.length;
    sample ??= page.data[0];
    if (!page.has_more) return { count, sample };
    cursor = page.next_cursor ?? undefined;
  }
}

// ---------------------------------------------------------------------------------------------------------------

/** One import job of `bodies` from its POST until it is completed (read every 5 ms): wall time. */
async function timedImport(
  target: Target,
  bodies: Record<string, unknown>[],
): Promise<{ ms: number; imported: number }> {
  const base = `${target.baseUrl}/organizations/${encodeURIComponent(target.organization)}/imports`;
  const headers = { authorization: `Bearer ${target.key}`, "content-type": "application/json" };
  const t0 = performance.now();
  const posted = await fetch(base, { method: "POST", headers, body: JSON.stringify({ rows: bodies }) });
  const job = (await posted.json()) as { id?: string; error?: unknown };
  if (posted.status !== 202 || !job.id)
    throw new Error(`import POST answered ${posted.status}: ${JSON.stringify(job)}`);
  for (;;) {
    const res = await fetch(`${base}/${job.id}?row_limit=0`, { headers });
    const now = (await res.json()) as { status: string; succeeded_rows: number };
    if (now.status === "completed" || now.status === "failed")
      return { ms: performance.now() - t0, imported: now.succeeded_rows };
    await sleep(5);
  }
}

async function main() {
  const started = Date.now();
  removeStaleRuns();
  fs.mkdirSync(path.join(RUN_DIR, "logs"), { recursive: true });

  log("starting an embedded Postgres (throwaway, in .dpp/bench/)...");
  // --profile: Postgres counts time per statement too (pg_stat_statements, planning included), for the
  // profiled rounds; loaded for the whole run, so both sides of every measured round pay its small cost.
  running.pg = await startEmbeddedPostgres(RUN_DIR, {
    ...BENCH_PG_SETTINGS,
    ...(opts.profile ? PG_STATEMENT_SETTINGS : {}),
  });
  const databaseUrl = running.pg.url;
  postmasterPid = Number(
    fs.readFileSync(path.join(RUN_DIR, "pgdata", "postmaster.pid"), "utf8").split("\n")[0],
  );

  log("migrating and starting the full system...");
  const logDir = path.join(RUN_DIR, "logs");
  await migrateAll(databaseUrl, logDir);
  const stackEnv: Record<string, string> = {
    RATE_LIMIT_PER_KEY_PER_MINUTE: "100000000",
    // One client address (the load generator) sends every scan.
    PUBLIC_RATE_LIMIT_PER_MINUTE: "100000000",
    DOCUMENTS_STORAGE_DIR: path.join(RUN_DIR, "documents"),
  };
  if (opts.profile) {
    fs.mkdirSync(PROFILE_RUN_DIR, { recursive: true });
    stackEnv.NODE_OPTIONS = `--require ${path.join(REPO_ROOT, "tools/bench/src/cpu-profiler.cjs")}`;
    stackEnv.BENCH_PROFILE_DIR = PROFILE_RUN_DIR;
  }
  // Each service its own process, as in production: CPU is measured per process.
  running.stack = await startStack({
    hosting: "process",
    databaseUrl,
    logDir,
    logLevel: "warn",
    env: stackEnv,
    nodeArgs: NODE_FLAGS[opts.nodeFlags],
  });
  const creds = await ensureDemoCredentials(
    databaseUrl,
    path.join(RUN_DIR, "credentials.json"),
    running.stack.baseUrl,
  );
  await unlimitedPublishing(databaseUrl, creds.organization_id);
  const full: Target = {
    baseUrl: running.stack.baseUrl,
    organization: creds.organization_id,
    key: creds.test_key,
    publicBaseUrl: running.stack.publicUrl,
  };

  log("starting the reference stack...");
  running.stats = new pg.Client({ connectionString: databaseUrl, application_name: "bench-runner" });
  await running.stats.connect();
  await running.stats.query(REFERENCE_DDL);
  if (opts.profile) await running.stats.query("create extension if not exists pg_stat_statements");
  const refGrpc = `127.0.0.1:${await freePort()}`;
  const refHttp = await freePort();
  const refBundles = await bundleEntries({
    "ref-service": path.join(REPO_ROOT, "tools/bench/reference/service.ts"),
    "ref-edge": path.join(REPO_ROOT, "tools/bench/reference/edge.ts"),
  });
  running.refService = startBundle(refBundles["ref-service"]!, [], {
    nodeArgs: NODE_FLAGS[opts.nodeFlags],
    env: { DATABASE_URL: databaseUrl, REF_GRPC_ADDR: refGrpc },
  });
  logTo(running.refService, "ref-svc");
  running.refEdge = startBundle(refBundles["ref-edge"]!, [], {
    nodeArgs: NODE_FLAGS[opts.nodeFlags],
    env: {
      REF_HTTP_PORT: String(refHttp),
      REF_SERVICE_ADDR: refGrpc,
      REF_KEY_DIGEST: createHash("sha256").update(full.key).digest("hex"),
      REF_ORG: full.organization,
    },
  });
  logTo(running.refEdge, "ref-edge");
  await waitHttp(`http://127.0.0.1:${refHttp}/readyz`, running.refEdge, "reference edge");
  const ref: Target = { ...full, baseUrl: `http://127.0.0.1:${refHttp}/v1` };
  const targets: Record<Side, Target> = { ref, full };

  running.loadgen = startNodeProcess(path.join(REPO_ROOT, "tools/bench/src/loadgen.ts"), [], {
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  const load = new LoadGenerator(running.loadgen);

  // --- the public surface and its reference ------------------------------------------------------------------
  const publicPaths: { publicIds: string[]; publicGtins: string[] } = { publicIds: [], publicGtins: [] };
  if (opts.cases.some((c) => PUBLIC_CASES.has(c))) {
    log(`publishing ${opts.publicPassports} live passports and recording their public answers...`);
    const live: Target = { ...full, key: creds.live_key };
    const bodies = Array.from({ length: opts.publicPassports }, (_, i) =>
      publishableBody(`public-${process.pid.toString(36)}`, i, PUBLIC_GTIN_PREFIX),
    );
    const ids = (
      await load.send<(string | undefined)[]>({ type: "create", target: live, bodies, connections: 8 })
    )
      .map((id, i) => ({ id, gtin: String((bodies[i]!.data as { gtin: string }).gtin) }))
      .filter((x): x is { id: string; gtin: string } => !!x.id);
    for (const { id } of ids) {
      const res = await fetch(
        `${full.baseUrl}/organizations/${encodeURIComponent(full.organization)}/passports/${id}/publish`,
        { method: "POST", headers: { authorization: `Bearer ${creds.live_key}` } },
      );
      if (res.status !== 200) throw new Error(`publishing ${id} answered ${res.status}: ${await res.text()}`);
    }
    publicPaths.publicIds = ids.map((x) => x.id);
    publicPaths.publicGtins = ids.map((x) => x.gtin.padStart(14, "0"));
    // The reference answers exactly the bytes the public surface answered for the same paths.
    const answers: Record<string, { status: number; headers: Record<string, string>; body: string }> = {};
    const paths = [
      ...publicPaths.publicIds.map((id) => `/p/${encodeURIComponent(id)}`),
      ...publicPaths.publicGtins.map((g) => `/01/${g}`),
    ];
    for (const p of paths) {
      const res = await fetch(`${running.stack.publicUrl}${p}`, {
        headers: BROWSER_HEADERS,
        redirect: "manual",
      });
      const headers: Record<string, string> = {};
      res.headers.forEach((v, k) => {
        if (!["date", "connection", "keep-alive", "transfer-encoding", "content-length"].includes(k))
          headers[k] = v;
      });
      answers[p] = {
        status: res.status,
        headers,
        body: Buffer.from(await res.arrayBuffer()).toString("base64"),
      };
    }
    const answersFile = path.join(RUN_DIR, "public-answers.json");
    fs.writeFileSync(answersFile, JSON.stringify(answers));
    const refPublicPort = await freePort();
    const publicBundle = await bundleEntries({
      "ref-public": path.join(REPO_ROOT, "tools/bench/reference/public.ts"),
    });
    running.refPublic = startBundle(publicBundle["ref-public"]!, [], {
      nodeArgs: NODE_FLAGS[opts.nodeFlags],
      env: { REF_PUBLIC_PORT: String(refPublicPort), REF_PUBLIC_ANSWERS: answersFile },
    });
    logTo(running.refPublic, "ref-public");
    await waitHttp(`http://127.0.0.1:${refPublicPort}/readyz`, running.refPublic, "reference public app");
    ref.publicBaseUrl = `http://127.0.0.1:${refPublicPort}`;
  }

  // --- prefill ---------------------------------------------------------------------------------------------
  log(`prefilling ${opts.prefill} passports on each side...`);
  const tag = `bench-${process.pid.toString(36)}-${Date.now().toString(36)}`;
  const bodies = Array.from({ length: opts.prefill }, (_, i) => createBody(`${tag}-prefill`, i));
  const fullIds = (
    await load.send<(string | undefined)[]>({ type: "create", target: full, bodies, connections: 16 })
  ).filter((x): x is string => !!x);
  const refIds = await referenceInsert(running.stats, full.organization, bodies);
  // The feed: wait until the events service has every passport.created of the prefill.
  let feed = await feedLength(full);
  for (const until = Date.now() + 60000; feed.count < opts.prefill && Date.now() < until;) {
    await sleep(500);
    feed = await feedLength(full);
  }
  const related = (feed.sample as { related?: Record<string, unknown> } | undefined)?.related ?? {};
  await running.stats.query(
    `insert into ${REFERENCE_SCHEMA}.events (organization_id, livemode, seq, id, type, related, created_at)
     select $1, false, s, 'ref_evt_' || s, 'passport.created', $2::jsonb || jsonb_build_object('id', 'ref_' || s), now()
     from generate_series(1, $3::int) s`,
    [full.organization, JSON.stringify(related), feed.count],
  );
  await running.stats.query(`analyze ${REFERENCE_SCHEMA}.items; analyze ${REFERENCE_SCHEMA}.events`);
  const input = (side: Side, kase: CaseName, drafts: string[] = []) => ({
    ids: side === "ref" ? refIds : fullIds,
    ...publicPaths,
    drafts,
    tag: `${tag}-${kase}-${side}-${Math.random().toString(36).slice(2, 8)}`,
  });

  /** Drafts ready to publish: the full system's made through its API, the reference's inserted directly. */
  const makeDrafts = async (count: Record<Side, number>): Promise<Record<Side, string[]>> => {
    const draftBodies = (n: number) =>
      Array.from({ length: n }, () => publishableBody(`${tag}-draft`, gtinCounter++, GTIN_PREFIX));
    const fullDrafts = count.full
      ? await load.send<(string | undefined)[]>({
          type: "create",
          target: full,
          bodies: draftBodies(count.full),
          connections: 16,
        })
      : [];
    return {
      full: fullDrafts.filter((x): x is string => !!x),
      ref: count.ref ? await referenceInsert(running.stats!, full.organization, draftBodies(count.ref)) : [],
    };
  };

  // --- rounds ----------------------------------------------------------------------------------------------
  const run = (side: Side, kase: CaseName, seconds: number, drafts?: string[]) =>
    load.send<RunResult>({
      type: "run",
      target: targets[side],
      kase,
      seconds,
      connections: opts.connections,
      input: input(side, kase, drafts),
    });

  log("warming up both sides (every case)...");
  const publishing = opts.cases.includes("publish");
  const warmDrafts = await makeDrafts({ full: publishing ? 300 : 0, ref: publishing ? 3000 : 0 });
  for (const kase of opts.cases)
    for (const side of SIDES) {
      const r = await run(side, kase, opts.warmup, warmDrafts[side]);
      if (r.ok === 0)
        throw new Error(`${side} ${kase}: no request succeeded while warming up: ${r.firstError}`);
    }
  await sleep(opts.settle * 1000);
  log(`measuring the idle system for ${opts.idleSeconds} s...`);
  idle = await measureIdle(opts.idleSeconds);

  const results = new Map<CaseName, Record<Side, RoundFigures[]>>();
  for (const kase of opts.cases) {
    log(`${kase}: ${opts.rounds} round(s) of ${opts.seconds} s per side`);
    let drafts: Record<Side, string[][]> | undefined;
    if (kase === "publish") {
      // Each publish uses up a draft: enough for each side's warm-up rate, doubled (tripled when the warm-up
      // itself ran out, its rate being then only a lower bound).
      const est = await makeDrafts({ full: 300, ref: 3000 });
      const perRound = {} as Record<Side, number>;
      for (const side of SIDES) {
        const w = await run(side, kase, opts.warmup, est[side]);
        perRound[side] =
          Math.ceil((w.ok / w.seconds) * (opts.seconds + opts.rewarm) * (w.exhausted ? 3 : 2)) + 50;
      }
      log(`publish: preparing ${perRound.ref} (ref) and ${perRound.full} (full) drafts per round...`);
      const all = await makeDrafts({ ref: perRound.ref * opts.rounds, full: perRound.full * opts.rounds });
      drafts = {
        full: Array.from({ length: opts.rounds }, (_, i) =>
          all.full.slice(i * perRound.full, (i + 1) * perRound.full),
        ),
        ref: Array.from({ length: opts.rounds }, (_, i) =>
          all.ref.slice(i * perRound.ref, (i + 1) * perRound.ref),
        ),
      };
      await sleep(opts.settle * 1000);
    }
    const rounds: Record<Side, RoundFigures[]> = { ref: [], full: [] };
    for (let i = 0; i < opts.rounds; i++)
      for (const side of SIDES) {
        // A publish uses a draft up: the re-warm-up takes the share of the round's drafts its length asks for.
        const roundDrafts = drafts?.[side][i];
        let rewarm: { from: Snapshot; ok: number } | undefined;
        if (opts.rewarm > 0) {
          const from = await snapshot();
          const share = roundDrafts
            ? roundDrafts.splice(
                0,
                Math.floor((roundDrafts.length * opts.rewarm) / (opts.seconds + opts.rewarm)),
              )
            : undefined;
          const w = await run(side, kase, opts.rewarm, share);
          rewarm = { from, ok: w.ok };
        }
        const a = await snapshot();
        const r = await run(side, kase, opts.seconds, roundDrafts);
        await sleep(opts.settle * 1000);
        const b = await snapshot();
        const f = figures(r, a, b, rewarm);
        rounds[side].push(f);
        log(
          `  ${kase} ${side} round ${i + 1}: ${fmt(f.rps)} req/s, p50 ${fmt(f.p50)} ms, p99 ${fmt(f.p99)} ms` +
            (f.other ? `, ${f.other} other answers (${f.firstError})` : "") +
            (f.exhausted ? ", ran out of drafts" : ""),
        );
      }
    results.set(kase, rounds);
  }

  // --- the public page at a fixed rate ------------------------------------------------------------------------
  const pageAtRate: Partial<Record<Side, RunResult>> = {};
  if (opts.cases.includes("page"))
    for (const side of SIDES) {
      log(`page at ${opts.pageRate} req/s for ${opts.seconds} s on ${side}...`);
      // Re-warmed at the same rate first (not measured), as every round is: the public surface's cache holds
      // what it read for PUBLIC_CACHE_TTL_MS, and the rounds before may be older than that.
      if (opts.rewarm > 0)
        await load.send<RunResult>({
          type: "rate",
          target: targets[side],
          kase: "page",
          rate: opts.pageRate,
          seconds: opts.rewarm,
          input: input(side, "page"),
        });
      pageAtRate[side] = await load.send<RunResult>({
        type: "rate",
        target: targets[side],
        kase: "page",
        rate: opts.pageRate,
        seconds: opts.seconds,
        input: input(side, "page"),
      });
      await sleep(1000);
    }

  // --- feed lag --------------------------------------------------------------------------------------------
  const lags: LagResult[] = [];
  for (const [i, rate] of opts.lagRates.entries()) {
    log(`feed lag at ${rate} creates/s for ${opts.lagSeconds} s...`);
    if (opts.rewarm > 0)
      await load.send<LagResult>({
        type: "lag",
        target: full,
        rate,
        seconds: opts.rewarm,
        tag: `${tag}-lag-${i}-${rate}-rewarm`,
        drainSeconds: 30,
      });
    lags.push(
      await load.send<LagResult>({
        type: "lag",
        target: full,
        rate,
        seconds: opts.lagSeconds,
        // Each lag run its own external ids, so a rate may be given twice (--lag-rates 200,200).
        tag: `${tag}-lag-${i}-${rate}`,
        drainSeconds: 30,
      }),
    );
    await sleep(opts.settle * 1000);
  }

  // --- webhook delivery lag --------------------------------------------------------------------------------
  // The same open loop of creates, each passport.created pushed to one endpoint on loopback (loadgen's webhookLag).
  for (const [i, rate] of opts.webhookRates.entries()) {
    log(`webhook delivery lag at ${rate} events/s for ${opts.lagSeconds} s...`);
    lags.push(
      await load.send<LagResult>({
        type: "lag",
        via: "webhook",
        target: full,
        rate,
        seconds: opts.lagSeconds,
        tag: `${tag}-hook-${i}-${rate}`,
        drainSeconds: 60,
      }),
    );
    await sleep(opts.settle * 1000);
  }

  // --- imports ---------------------------------------------------------------------------------------------
  // One job of importRows rows from its POST to `completed`, beside the same passports created by 16 parallel
  // POST /passports (the loadgen's create), alternately first; wall times.
  const imports: { importMs: number; parallelMs: number; imported: number; created: number }[] = [];
  for (let i = 0; i < opts.importRounds; i++) {
    log(
      `import of ${opts.importRows} rows beside ${opts.importRows} creates on 16 connections, round ${i + 1}...`,
    );
    const bodies = (kind: string) =>
      Array.from({ length: opts.importRows }, (_, n) => createBody(`${tag}-${kind}-${i}`, n));
    const viaImport = async () => timedImport(full, bodies("import"));
    const viaCreates = async () => {
      const t0 = performance.now();
      const ids = await load.send<(string | undefined)[]>({
        type: "create",
        target: full,
        bodies: bodies("parallel"),
        connections: 16,
      });
      return { ms: performance.now() - t0, created: ids.filter(Boolean).length };
    };
    let a: { ms: number; imported: number };
    let b: { ms: number; created: number };
    if (i % 2 === 0) {
      a = await viaImport();
      await sleep(1000);
      b = await viaCreates();
    } else {
      b = await viaCreates();
      await sleep(1000);
      a = await viaImport();
    }
    imports.push({ importMs: a.ms, parallelMs: b.ms, imported: a.imported, created: b.created });
    log(
      `  import ${fmt(a.ms)} ms (${a.imported} rows succeeded), 16 parallel creates ${fmt(b.ms)} ms (${b.created} created)`,
    );
    await sleep(1000);
  }

  // --- variant batches -------------------------------------------------------------------------------------
  let variants: VariantFigures | undefined;
  if (opts.variantRounds > 0) {
    log(`variant batches of 1000, ${opts.variantRounds} round(s) per side...`);
    variants = await benchVariants({ full, ref }, opts.variantRounds, 2, 1000, log);
  }

  // --- report ----------------------------------------------------------------------------------------------
  const cpu = os.cpus();
  const out: string[] = [];
  out.push(
    `bench ${new Date().toISOString()}  ${cpu.length} cores (${cpu[0]?.model.trim() ?? "?"})  node ${process.version}  ` +
      `load avg ${os
        .loadavg()
        .map((x) => x.toFixed(2))
        .join(" ")}`,
  );
  out.push(
    `${opts.rounds} round(s) x ${opts.seconds} s per side, interleaved ref/full; ${opts.connections} connections; ` +
      `medians across rounds; CPU in ms per request; settle ${opts.settle} s; re-warm-up ${opts.rewarm} s before each round; ` +
      `node flags: ${opts.nodeFlags} (${NODE_FLAGS[opts.nodeFlags].join(" ") || "V8's defaults"})`,
  );
  out.push(
    `idle (subtracted): ` +
      PROCESSES.map((p) => `${p} ${fmt(idle.cpuPerSec[p])} ms/s`).join(", ") +
      `, ${fmt(idle.xactPerSec)} txn/s`,
  );
  out.push("");
  const header = [
    "case",
    "side",
    "req/s",
    "p50 ms",
    "p99 ms",
    "other",
    ...PROCESSES,
    "cpu ms/req",
    "txn/req",
    "full/ref",
  ];
  const rows: string[][] = [header];
  for (const [kase, rounds] of results) {
    for (const side of SIDES) {
      const rs = rounds[side];
      const m = (f: (r: RoundFigures) => number) => median(rs.map(f));
      const shown = (p: ProcessName) => SIDE_PROCESSES[side].includes(p) || SHARED_PROCESSES.includes(p);
      const cpuOf = (p: ProcessName) => (shown(p) ? m((r) => r.cpuPerReq[p]) : NaN);
      const total = m((r) => SIDE_PROCESSES[side].reduce((s, p) => s + r.cpuPerReq[p], 0));
      const ratio =
        side === "full" ? median(rounds.full.map((r, i) => r.rps / (rounds.ref[i]?.rps ?? NaN))) : NaN;
      rows.push([
        side === "ref" ? kase : "",
        side,
        fmt(m((r) => r.rps)),
        fmt(m((r) => r.p50)),
        fmt(m((r) => r.p99)),
        String(rs.reduce((s, r) => s + r.other, 0)),
        ...PROCESSES.map((p) => fmt(cpuOf(p))),
        fmt(total),
        fmt(m((r) => r.xactPerReq)),
        side === "full" ? ratio.toFixed(2) : "",
      ]);
    }
  }
  out.push(table(rows));
  const publicRatio = (kase: CaseName) => {
    const r = results.get(kase);
    return r ? median(r.full.map((f, i) => f.rps / (r.ref[i]?.rps ?? NaN))) : NaN;
  };
  if (results.has("resolve"))
    out.push(
      `resolver 307: full/ref throughput ${publicRatio("resolve").toFixed(2)} (target: at least 0.70; printed, not asserted)`,
    );
  if (pageAtRate.full && pageAtRate.ref)
    out.push(
      `public page at ${opts.pageRate} req/s: ref p99 ${fmt(pageAtRate.ref.p99)} ms, full p99 ${fmt(pageAtRate.full.p99)} ms, ` +
        `full p50 ${fmt(pageAtRate.full.p50)} ms, ${pageAtRate.full.ok} ok of ${Math.round(opts.pageRate * opts.seconds)} ` +
        `(target: full p99 under 50 ms; printed, not asserted)`,
    );
  if (lags.length) {
    out.push("");
    const lagRows = [
      ["lag", "target/s", "achieved/s", "created", "seen", "p50 ms", "p99 ms", "max ms", "repeated"],
    ];
    for (const l of lags)
      lagRows.push([
        l.via === "webhook" ? "webhook delivery" : "feed",
        String(l.rate),
        fmt(l.created / l.seconds),
        String(l.created),
        String(l.seen),
        fmt(percentile(l.lagsMs, 50)),
        fmt(percentile(l.lagsMs, 99)),
        fmt(Math.max(...l.lagsMs)),
        l.via === "webhook" ? String(l.duplicates ?? 0) : "",
      ]);
    out.push(table(lagRows, 1));
    if (lags.some((l) => l.via === "webhook"))
      out.push(
        "webhook target: delivery lag p99 under 500 ms at 200 events/s, from the create's 201 to the receiver (printed, not asserted)",
      );
  }
  if (imports.length) {
    out.push("");
    const importRows = [
      [
        `${opts.importRows} passports`,
        "import POST→completed ms",
        "16 parallel POST /passports ms",
        "parallel/import",
      ],
    ];
    for (const [i, r] of imports.entries())
      importRows.push([
        `round ${i + 1}`,
        fmt(r.importMs),
        fmt(r.parallelMs),
        (r.parallelMs / r.importMs).toFixed(2),
      ]);
    const mi = median(imports.map((r) => r.importMs));
    const mp = median(imports.map((r) => r.parallelMs));
    importRows.push(["median", fmt(mi), fmt(mp), (mp / mi).toFixed(2)]);
    out.push(table(importRows, 1));
    out.push(
      `import target: under 1000 ms and at least 1.5x faster than the parallel creates (printed, not asserted)`,
    );
  }
  if (variants) out.push("", ...variantsTable(variants));
  if (opts.uploads > 0) {
    const [passportId] = (
      await load.send<(string | undefined)[]>({
        type: "create",
        target: full,
        bodies: [createBody(`${tag}-documents`, 0)],
        connections: 1,
      })
    ).filter((x): x is string => !!x);
    out.push("", ...uploadTable(await benchDocumentUpload(full, passportId!, opts.uploads)));
  }
  console.log(out.join("\n"));

  // --- profiles --------------------------------------------------------------------------------------------
  if (opts.profile) await profileRounds(full, load, input, makeDrafts, results);
  log(`done in ${((Date.now() - started) / 1000).toFixed(0)} s`);
}

/**
 * One more round per case of the full system, each service under the V8 CPU profiler for exactly that round
 * (cpu-profiler.cjs, started and stopped by SIGUSR2), then the top self-time functions of each service. Runs
 * after the measured rounds, so the profiler never slows a measured round.
 */
async function profileRounds(
  target: Target,
  load: LoadGenerator,
  input: (side: Side, kase: CaseName) => { ids: string[]; drafts: string[]; tag: string },
  makeDrafts: (count: Record<Side, number>) => Promise<Record<Side, string[]>>,
  results: Map<CaseName, Record<Side, RoundFigures[]>>,
) {
  const services = Object.values(running.stack!.services);
  const signal = () => {
    for (const s of services) s.process.kill("SIGUSR2");
  };
  const out: string[] = [
    "",
    `CPU profiles (${path.relative(REPO_ROOT, PROFILE_RUN_DIR)}): top 10 self time per service, one round of ${opts.seconds} s per case`,
  ];
  /**
   * `work` with every service under the profiler and Postgres' statement counts reset before it; then each
   * service's top functions and the top statements, per request of the `requests` it says it made.
   */
  const profiled = async (label: string, requests: () => number, work: () => Promise<void>) => {
    const before = new Set(fs.readdirSync(PROFILE_RUN_DIR));
    await running.stats!.query("select pg_stat_statements_reset()");
    const t0 = performance.now();
    signal();
    await work();
    signal();
    const seconds = (performance.now() - t0) / 1000;
    // Every statement of the round, the relay's and the feed's that follow it included.
    await sleep(1000);
    const statements = await topStatements(running.stats!, 10);
    const files = new Map<number, string>();
    for (const until = Date.now() + 30000; files.size < services.length && Date.now() < until;) {
      await sleep(200);
      for (const name of fs.readdirSync(PROFILE_RUN_DIR)) {
        const m = /^(\d+)\.\d+\.cpuprofile$/.exec(name);
        if (m && !before.has(name)) files.set(Number(m[1]), path.join(PROFILE_RUN_DIR, name));
      }
    }
    const n = requests();
    out.push("", `${label}: ${n} requests in ${fmt(seconds)} s`);
    for (const s of services) {
      const file = files.get(s.process.pid!);
      if (!file) {
        out.push(`  ${s.name}: no profile written`);
        continue;
      }
      const sum = new ProfileFile(file).summarize(10);
      out.push(`  ${s.name}: busy ${fmt(sum.busyMs)} ms (${fmt(sum.busyMs / Math.max(1, n))} ms/req)`);
      for (const h of sum.top)
        out.push(
          `    ${fmt(h.selfMs).padStart(7)} ms ${((100 * h.selfMs) / Math.max(1, sum.busyMs)).toFixed(1).padStart(5)}%  ${h.name}`,
        );
    }
    const perReq = (ms: number) => fmt((1000 * ms) / Math.max(1, n));
    out.push(
      `  postgres statements (pg_stat_statements, top 10 by planning + execution time; µs per request):`,
      `    ${"plan".padStart(7)} ${"exec".padStart(7)} ${"calls/req".padStart(9)}  statement`,
    );
    for (const st of statements)
      out.push(
        `    ${perReq(st.planMs).padStart(7)} ${perReq(st.execMs).padStart(7)} ${fmt(st.calls / Math.max(1, n)).padStart(9)}  ${st.query}`,
      );
  };
  for (const kase of opts.cases) {
    log(`profiling ${kase}...`);
    const measured = median(results.get(kase)?.full.map((r) => r.rps) ?? []);
    const need =
      Math.ceil((Number.isFinite(measured) ? measured : 100) * (opts.seconds + opts.warmup) * 2) + 50;
    // The load generator gets a copy of the drafts: the warm-up and the round each get their own.
    const drafts = kase === "publish" ? (await makeDrafts({ full: need, ref: 0 })).full : [];
    const warmDrafts = drafts.splice(0, Math.ceil(drafts.length / 3));
    const send = (seconds: number, d: string[]) =>
      load.send<RunResult>({
        type: "run",
        target,
        kase,
        seconds,
        connections: opts.connections,
        input: { ...input("full", kase), drafts: d },
      });
    await send(opts.warmup, warmDrafts);
    let r: RunResult | undefined;
    await profiled(
      kase,
      () => r?.ok ?? 0,
      async () => {
        r = await send(opts.seconds, drafts);
      },
    );
  }
  // The variant batches: their POSTs in one profiled span, then their removals in another.
  if (opts.variantRounds > 0) {
    log("profiling the variant batches...");
    const rounds = Math.max(3, opts.variantRounds);
    await profileVariants(target, rounds, 1000, (label, requests, work) =>
      profiled(label, () => requests, work),
    );
  }
  console.log(out.join("\n"));
}

/**
 * Both stacks with full pools (three services of the production pool size, 10 each, and their bus listeners;
 * the reference's 10; the runner's own) need more than the local stack's 40 connections: past it, a pool that
 * grows when a case starts is refused ("too many clients") and its requests fail.
 */
const BENCH_PG_SETTINGS = { max_connections: "100" };

/** Settings that make Postgres count planning and execution time per statement (--profile). */
const PG_STATEMENT_SETTINGS = {
  shared_preload_libraries: "pg_stat_statements",
  "pg_stat_statements.track": "all",
  "pg_stat_statements.track_planning": "on",
};

/** The statements that took the most time since the last reset, their text on one line, shortened. */
async function topStatements(c: pg.Client, n: number) {
  const { rows } = await c.query<{ query: string; calls: string; plan_ms: number; exec_ms: number }>(
    `select query, calls, total_plan_time as plan_ms, total_exec_time as exec_ms from pg_stat_statements
     where query not like '%pg_stat_statements%'
     order by total_plan_time + total_exec_time desc limit $1`,
    [n],
  );
  return rows.map((r) => ({
    query: r.query.replace(/\s+/g, " ").slice(0, 140),
    calls: Number(r.calls),
    planMs: r.plan_ms,
    execMs: r.exec_ms,
  }));
}

main().then(
  () => cleanup().then(() => process.exit(0)),
  (err: unknown) => {
    console.error("bench failed:", err instanceof Error ? (err.stack ?? err.message) : err);
    void cleanup().then(() => process.exit(1));
  },
);
