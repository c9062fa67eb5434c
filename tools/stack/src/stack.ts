/**
 * The local stack: every service of the registry (services.json), talking gRPC,
 * against one Postgres (embedded when no DATABASE_URL is given). Used by `npm start`
 * and by the e2e tests. Every gRPC service listens on 127.0.0.1 only. Each service
 * runs as its own process or in a worker thread of this one (`hosting`, hosting.ts):
 * the e2e harness and the benchmark run processes, `npm start` threads unless
 * STACK_HOSTING=process. With `supervise` (npm start), a service that dies is
 * restarted with backoff (supervise.ts); without it (the e2e harness), a service
 * that exits stays down until startService().
 *
 * Each service runs from its bundle (tools/stack/build.mjs: built once per content
 * of the sources, under .dpp/build) and writes its own log: a file of `logDir` (a
 * process's stdout and stderr are that file; a thread's logger appends to it), or
 * this process's stdout and stderr; its log lines are never relayed through the stack.
 */
import { createHash, randomInt } from "node:crypto";
import { execFile, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import {
  createDb,
  createHealthClient,
  formatTrustedKeys,
  generateInternalKeyPair,
  type InternalKeyPair,
  type Logger,
} from "@dpp/kit/internal";
import { healthV1 } from "@dpp/proto";
import {
  calleesOf,
  gatewayEntry,
  loadRegistry,
  REPO_ROOT,
  type ServiceEntry,
  type ServiceName,
} from "../../registry";
import { startBalancer, type Balancer } from "./balancer";
import { launch as launchUnit, type Hosting, type Unit } from "./hosting";
import { DEFAULT_SUPERVISION, Supervisor, type SupervisionEvent, type SupervisionPolicy } from "./supervise";

export { REPO_ROOT, loadRegistry, type ServiceName };
export { hostingFromEnv, SERVICE_NODE_ARGS, type Hosting } from "./hosting";
export { describeSupervisionEvent, type SupervisionEvent, type SupervisionPolicy } from "./supervise";

/** The registry, validated (an invalid services.json stops the stack before anything starts). */
const SERVICES = loadRegistry();
const GATEWAY = gatewayEntry(SERVICES);
const GRPC_SERVICES = SERVICES.filter((s) => s.kind === "grpc");
const byName = (name: ServiceName): ServiceEntry => SERVICES.find((s) => s.name === name)!;

/** Every local listener binds here: nothing of the stack is reachable from another machine. */
const HOST = "127.0.0.1";

export interface StackOptions {
  /**
   * Each service as its own process (the e2e harness, the benchmark: production-like, CPU per process) or in
   * a worker thread of this process (npm start: one Node process for the whole stack). No default: each
   * caller says which.
   */
  hosting: Hosting;
  /** Postgres to use; every service gets its own schema in it. */
  databaseUrl: string;
  /**
   * Port of each service (the gateway's HTTP port, a gRPC service's port); unset → a free port. With several
   * replicas, a gRPC service's first replica listens there and the others on free ports; the gateway's port
   * is its balancer's (the replicas listen on free ports behind it).
   */
  ports?: Partial<Record<ServiceName, number>>;
  /** Port of each service's metrics listener (METRICS_PORT); unset → a free port. */
  metricsPorts?: Partial<Record<ServiceName, number>>;
  /**
   * Replicas of every service (a number), or of each service (others: 1). 1, the default, runs each service
   * once, on its port, with nothing in front. With more, each replica listens on a port of its own, its callers
   * get the list of them all (`ipv4:127.0.0.1:P1,127.0.0.1:P2`: the kit's clients spread their calls over it),
   * and the gateway's and the public surface's HTTP listeners get one port in front of their replicas, a TCP
   * balancer of this process (balancer.ts; docs/decisions/0062-local-replicas.md).
   */
  replicas?: number | Partial<Record<ServiceName, number>>;
  /** Variables of one service (over `env`), e.g. a LOG_LEVEL of its own. */
  serviceEnv?: Partial<Record<ServiceName, Record<string, string>>>;
  /** Interface of the gateway's HTTP listener (127.0.0.1 by default). */
  gatewayHost?: string;
  /**
   * Port of the public surface's HTTP listener (the public passport pages, QR codes and the GS1 Digital Link
   * resolver); unset → a free port. PUBLIC_BASE_URL and RESOLVER_BASE_URL of passport and public-surface point
   * at it unless `env` names them (docs/decisions/0059-public-surface.md).
   */
  publicPort?: number;
  /**
   * Where each service writes its output: `<logDir>/<name>.log` (appended); undefined → this process's own
   * stdout and stderr, inherited (JSON lines, each naming its service).
   */
  logDir?: string;
  logLevel?: string;
  env?: Record<string, string>;
  /** Node's own flags of each service process (process hosting); SERVICE_NODE_ARGS when absent. */
  nodeArgs?: readonly string[];
  log?: Pick<Logger, "info" | "warn" | "error">;
  /** Internal-auth key pairs of the callers (made fresh for each stack when absent). */
  keys?: StackKeys;
  /**
   * Restart a service that dies (npm start). Off by default: the e2e tests kill and start services themselves.
   * `report` receives each death, restart and the giving up (after which nothing is restarted; the caller stops
   * the stack).
   */
  supervise?: { policy?: Partial<SupervisionPolicy>; report: (event: SupervisionEvent) => void };
}

/** The services the admin CLI calls directly (its platform transitions). */
const ADMIN_CALLEES: readonly ServiceName[] = ["passport", "filings", "webhooks", "public-surface"];

/** One Ed25519 key pair per caller: each service that calls another, and "admin" (the admin CLI). */
export type StackKeys = Readonly<Record<string, InternalKeyPair>>;

export function generateStackKeys(): StackKeys {
  const keys: Record<string, InternalKeyPair> = { admin: generateInternalKeyPair() };
  for (const s of SERVICES)
    if (calleesOf(SERVICES, s.name).length > 0) keys[s.name] = generateInternalKeyPair();
  return keys;
}

/** One replica of a service. */
export interface RunningReplica<H extends Hosting = Hosting> {
  /** 0, 1, ... */
  index: number;
  /** What it is called in the stack's lines, its log file and its log lines (REPLICA_ID): "passport-2". */
  id: string;
  /** Its own address (a gRPC service's 127.0.0.1:port; the gateway's HTTP listener behind the balancer). */
  address: string;
  process: H extends "process" ? ChildProcess : undefined;
  unit: Unit;
  readyInMs?: number;
  /** Where Prometheus reads this replica's metrics (METRICS_PORT: a port of its own per replica). */
  metricsUrl: string;
}

export interface RunningService<H extends Hosting = Hosting> {
  name: ServiceName;
  /** The address its callers get: 127.0.0.1:port, or with several replicas `ipv4:` and the list of them. */
  address: string;
  /** Every replica (one by default); `process`, `unit` and `readyInMs` above are the first's. */
  replicas: RunningReplica<H>[];
  hosting: H;
  /** The service's process (process hosting). */
  process: H extends "process" ? ChildProcess : undefined;
  /** The service's run, whichever the hosting. */
  unit: Unit;
  /** Time from starting the process or thread until it answered its readiness check. */
  readyInMs?: number;
  /** Where Prometheus reads the first replica's metrics (METRICS_PORT: a port of its own per replica). */
  metricsUrl: string;
}

export interface Stack<H extends Hosting = Hosting> {
  hosting: H;
  baseUrl: string;
  /** PUBLIC_BASE_URL and RESOLVER_BASE_URL: where the public surface answers (public_url, qr_target). */
  publicUrl: string;
  resolverUrl: string;
  /** The admin CLI's private key for this stack (INTERNAL_AUTH_PRIVATE_KEY of `npm run admin`). */
  adminKey: string;
  gatewayPort: number;
  services: Record<ServiceName, RunningService<H>>;
  /**
   * Stops one service (SIGTERM, or a thread's shutdown message; SIGKILL or terminate() after the grace
   * period); a supervised stack does not restart it.
   */
  stopService(name: ServiceName): Promise<void>;
  /**
   * Sends a signal (SIGKILL by default: a crash, no cleanup; a thread takes SIGKILL, terminate(), and SIGTERM
   * or SIGINT, its shutdown message) and waits for the service to end; a supervised stack does not restart it
   * either (the caller decides when it comes back).
   */
  killService(name: ServiceName, signal?: NodeJS.Signals): Promise<void>;
  /** Starts a stopped service again on the same address (supervised again when the stack is). */
  startService(name: ServiceName, o?: { env?: Record<string, string> }): Promise<void>;
  /**
   * killService, stopService and startService for one replica (index 0, 1, ...). A gateway or public-surface
   * replica that is stopped takes no new connection from the balancer from the moment it is asked to stop.
   */
  killReplica(name: ServiceName, index: number, signal?: NodeJS.Signals): Promise<void>;
  stopReplica(name: ServiceName, index: number): Promise<void>;
  startReplica(name: ServiceName, index: number): Promise<void>;
  /** Connections each balancer (the gateway's, the public surface's) handed to each replica; none with one. */
  balanced: Partial<Record<"gateway" | "public", readonly number[]>>;
  stop(): Promise<void>;
}

/** The replicas of each service that `replicas` asks for (1 unless it says otherwise). */
export function replicaCounts(replicas: StackOptions["replicas"]): Record<ServiceName, number> {
  const counts = {} as Record<ServiceName, number>;
  for (const s of SERVICES) {
    const n = typeof replicas === "number" ? replicas : (replicas?.[s.name] ?? 1);
    if (!Number.isInteger(n) || n < 1 || n > 16)
      throw new Error(`replicas of ${s.name} must be a whole number from 1 to 16, got ${n}`);
    counts[s.name] = n;
  }
  return counts;
}

/** The id of replica `index` of `name` among `count`: the service's name alone when it runs once. */
export function replicaId(name: ServiceName, index: number, count: number): string {
  return count === 1 ? name : `${name}-${index + 1}`;
}

/**
 * Ports the stack hands out: below the kernel's ephemeral range (32768-60999 on Linux), so an outgoing
 * connection's source port never takes one between the moment it is chosen and the moment its service binds it.
 */
const PORT_RANGE = { from: 20_000, count: 12_000 };
/**
 * One file per port handed out, created exclusively: two processes (parallel test workers, `npm start` beside a
 * test run) never hand out the same port. A reservation only has to cover the time until the service binds the
 * port (a bound port fails the listen check below), so one older than two minutes is taken over.
 */
const RESERVATIONS = path.join(os.tmpdir(), "dpp-port-reservations");
const RESERVATION_MS = 120_000;

function reserve(port: number): boolean {
  const file = path.join(RESERVATIONS, String(port));
  try {
    fs.writeFileSync(file, String(process.pid), { flag: "wx" });
    return true;
  } catch {
    try {
      if (Date.now() - fs.statSync(file).mtimeMs < RESERVATION_MS) return false;
      fs.rmSync(file, { force: true });
      fs.writeFileSync(file, String(process.pid), { flag: "wx" });
      return true;
    } catch {
      return false;
    }
  }
}

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.unref();
    srv.once("error", () => resolve(false));
    srv.listen(port, "127.0.0.1", () => srv.close(() => resolve(true)));
  });
}

/** A port on 127.0.0.1 that nothing listens on and no other caller of freePort on this machine was given. */
export async function freePort(): Promise<number> {
  fs.mkdirSync(RESERVATIONS, { recursive: true });
  for (let tries = 0; tries < 500; tries++) {
    const port = PORT_RANGE.from + randomInt(PORT_RANGE.count);
    if (reserve(port) && (await canListen(port))) return port;
  }
  throw new Error(`no free port found in ${PORT_RANGE.from}-${PORT_RANGE.from + PORT_RANGE.count - 1}`);
}

const BUILD_SCRIPT = path.join(REPO_ROOT, "tools", "stack", "build.mjs");

let bundles: Promise<Record<string, string>> | undefined;

/**
 * The bundle of every entry of tools/stack/build.mjs (each service, the demo step): the current build,
 * made first when the sources changed since; once per process. The build runs as its own process: this
 * one never loads esbuild.
 */
export function buildBundles(): Promise<Record<string, string>> {
  bundles ??= new Promise<Record<string, string>>((resolve, reject) => {
    execFile(
      process.execPath,
      [BUILD_SCRIPT, "--json"],
      { cwd: REPO_ROOT, maxBuffer: 1024 * 1024 },
      (err, stdout, stderr) => {
        if (err) reject(new Error(`building the local stack failed:\n${stderr || err.message}`));
        else {
          // What was built, if anything (the sources changed since the last build).
          if (stderr) process.stderr.write(stderr);
          resolve(JSON.parse(stdout) as Record<string, string>);
        }
      },
    );
  }).catch((err: unknown) => {
    bundles = undefined;
    throw err;
  });
  return bundles;
}

/**
 * Runs the services from the build in `dir` (the orchestrator's own, when it runs from its bundle:
 * `npm start` has just built or checked it), without asking tools/stack/build.mjs again.
 */
export function useBundlesIn(dir: string): void {
  const names = [...SERVICES.map((s) => s.name), "stack-demo", "portal-simulator"];
  bundles = Promise.resolve(Object.fromEntries(names.map((n) => [n, path.join(dir, `${n}.js`)])));
}

/** The log file of a service in `logDir`. */
export function logFileOf(logDir: string, name: string): string {
  return path.join(logDir, `${name}.log`);
}

/** The last `lines` lines of a file ("" when it cannot be read): what a service wrote before it died. */
export function tailOf(file: string, lines = 20): string {
  try {
    const size = fs.statSync(file).size;
    const length = Math.min(size, 64 * 1024);
    const buffer = Buffer.alloc(length);
    const fd = fs.openSync(file, "r");
    try {
      fs.readSync(fd, buffer, 0, length, size - length);
    } finally {
      fs.closeSync(fd);
    }
    return buffer.toString("utf8").split("\n").filter(Boolean).slice(-lines).join("\n");
  } catch {
    return "";
  }
}

/**
 * Runs `<service> migrate` of every registered service, all at once, each as its own process or in a thread
 * of this one (each migrates its own schema; the shared bus schema is guarded by its migration lock), then
 * checks that each service's registered schema exists. The Helm migrations Job runs the same commands one
 * after another.
 */
export async function migrateAll(
  databaseUrl: string,
  logDir?: string,
  hosting: Hosting = "process",
): Promise<void> {
  const built = await buildBundles();
  const failures = await Promise.all(
    SERVICES.map(async ({ name }) => {
      const unit = launchUnit(hosting, {
        name,
        bundle: built[name]!,
        args: ["migrate"],
        env: { DATABASE_URL: databaseUrl, LOG_LEVEL: "warn" },
        logFile: logDir ? logFileOf(logDir, name) : undefined,
      });
      await unit.exited;
      if (unit.exitCode === 0) return undefined;
      const said = logDir ? tailOf(logFileOf(logDir, name)) : "";
      return (
        `migrations of ${name} failed (${unit.exit})` +
        (logDir ? `; the end of ${logFileOf(logDir, name)}:\n${said}` : "")
      );
    }),
  );
  const failed = failures.filter((f): f is string => f !== undefined);
  if (failed.length > 0) throw new Error(failed.join("\n"));
  const schemas = SERVICES.flatMap((s) => (s.schema ? [s.schema] : []));
  if (schemas.length === 0) return;
  const db = createDb<{ "information_schema.schemata": { schema_name: string } }>({
    url: databaseUrl,
    schema: "information_schema",
    applicationName: "stack-migrate",
    max: 1,
  });
  try {
    const rows = await db
      .selectFrom("information_schema.schemata")
      .select("schema_name")
      .where("schema_name", "in", schemas)
      .execute();
    const present = new Set(rows.map((r) => r.schema_name));
    for (const s of SERVICES)
      if (s.schema && !present.has(s.schema))
        throw new Error(`${s.name} migrated, but its schema "${s.schema}" (services.json) does not exist`);
  } finally {
    await db.destroy();
  }
}

type Readiness = "ready" | "not yet";

/** A running service disagrees with its registry entry: starting fails at once. */
class RegistryMismatch extends Error {}

/** How long a service (with one replica of each) gets to answer its readiness check. */
const READY_TIMEOUT_MS = 30_000;

async function waitFor(
  what: string,
  check: () => Promise<Readiness>,
  unit: Unit,
  timeoutMs = READY_TIMEOUT_MS,
) {
  const until = Date.now() + timeoutMs;
  // What the last probe found, for the error: whether the service listened at all, and what it answered.
  let last = "no probe answered";
  while (Date.now() < until) {
    if (unit.exit !== undefined) throw new Error(`${what} exited (${unit.exit}) while starting`);
    const state = await check().catch((err: unknown) => {
      if (err instanceof RegistryMismatch) throw err;
      const cause = (err as { cause?: { message?: unknown } }).cause?.message;
      last = `${(err as Error).message}${typeof cause === "string" ? ` (${cause})` : ""}`;
      return "not yet" as const;
    });
    if (state === "ready") return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${what} did not become ready within ${timeoutMs} ms; the last probe: ${last}`);
}

/**
 * Ready when the server reports SERVING for "" (the whole server); then every
 * protobuf service of its registry entry must report SERVING too: a registered
 * name it does not serve is an error, not a wait.
 */
/** Health check failures that say nothing about what the server serves. */
const TRANSIENT = new Set(["upstream_timeout", "upstream_unavailable", "outcome_unknown"]);

async function grpcServing(s: ServiceEntry, address: string): Promise<Readiness> {
  const client = createHealthClient(address, { deadlineMs: 1000 });
  const SERVING = healthV1.HealthCheckResponse_ServingStatus.SERVING;
  const check = (service: string) => client.check(service);
  try {
    if ((await check("")) !== SERVING) return "not yet";
    for (const name of s.protoServices) {
      // A check that timed out or found the server gone is asked again; an answer other than SERVING is not.
      const status = await check(name).catch((err: unknown) =>
        TRANSIENT.has(String((err as { details?: { reason?: unknown } }).details?.reason))
          ? "again"
          : undefined,
      );
      if (status === "again") return "not yet";
      if (status !== SERVING)
        throw new RegistryMismatch(`${s.name} is up but does not serve ${name} (listed in services.json)`);
    }
    return "ready";
  } finally {
    client.close();
  }
}

async function httpReady(url: string): Promise<Readiness> {
  // Bounded: a probe that never answers must not hold the start past its timeout.
  const res = await fetch(url, { signal: AbortSignal.timeout(2000) });
  if (res.ok) return "ready";
  throw new Error(`${url} answered ${res.status}: ${(await res.text()).slice(0, 300)}`);
}

/**
 * The environment of each service's `serve` process: DATABASE_URL, LOG_LEVEL and
 * the extra variables; GRPC_ADDR on 127.0.0.1 for a gRPC service, HTTP_HOST and
 * HTTP_PORT for the gateway; and the <NAME>_ADDR of every service that lists it
 * among its callers; internal authentication: the private key of a service that
 * calls others, and a gRPC service's trusted keys (its callers', and the admin
 * CLI's for the services it calls).
 */
export function serviceEnvs(
  o: Pick<StackOptions, "databaseUrl" | "logLevel" | "env" | "gatewayHost">,
  ports: Record<ServiceName, number>,
  keys: StackKeys,
  publicPort = 0,
  /** What each service's callers are given (127.0.0.1:<port> when absent: one replica). */
  addresses?: Partial<Record<ServiceName, string>>,
  metricsPorts?: Record<ServiceName, number>,
): Record<ServiceName, Record<string, string>> {
  const address = (name: ServiceName) => addresses?.[name] ?? `${HOST}:${ports[name]}`;
  const common = { DATABASE_URL: o.databaseUrl, LOG_LEVEL: o.logLevel ?? "info", ...o.env };
  const envs = {} as Record<ServiceName, Record<string, string>>;
  for (const s of SERVICES) {
    const env: Record<string, string> =
      s.kind === "grpc"
        ? { ...common, GRPC_ADDR: `${HOST}:${ports[s.name]}` }
        : { ...common, HTTP_HOST: o.gatewayHost ?? HOST, HTTP_PORT: String(ports[s.name]) };
    for (const callee of calleesOf(SERVICES, s.name)) env[callee.addrEnv!] = address(callee.name);
    // A review_url leads to the gateway's own review page (/review) unless the environment names another.
    if ((s.name === "passport" || s.name === "variants-units") && !o.env?.REVIEW_BASE_URL)
      env.REVIEW_BASE_URL = `http://${o.gatewayHost ?? HOST}:${ports[GATEWAY.name]}/review`;
    // The links a passport reports (public_url, qr_target, the GS1 Digital Link) lead to the public surface's
    // listener on this machine unless the environment names other hosts.
    if (s.name === "passport" || s.name === "public-surface") {
      const local = publicBaseUrl(publicPort, o.gatewayHost);
      if (!o.env?.PUBLIC_BASE_URL) env.PUBLIC_BASE_URL = local;
      if (!o.env?.RESOLVER_BASE_URL) env.RESOLVER_BASE_URL = local;
      // The secret of preview_url's token, the same for both; derived from this stack's keys (made per stack).
      if (!o.env?.PREVIEW_SIGNING_SECRET && keys.admin)
        env.PREVIEW_SIGNING_SECRET = createHash("sha256")
          .update(`dpp-preview:${keys.admin.privateKey}`)
          .digest("base64url");
    }
    if (s.name === "public-surface") {
      env.PUBLIC_SURFACE_HTTP_HOST = o.gatewayHost ?? HOST;
      env.PUBLIC_SURFACE_HTTP_PORT = String(publicPort);
    }
    // Each service's metrics on a port of its own (several run on one machine, in threads or processes).
    if (metricsPorts) {
      env.METRICS_HOST = HOST;
      env.METRICS_PORT = String(metricsPorts[s.name]);
    }
    if (keys[s.name]) env.INTERNAL_AUTH_PRIVATE_KEY = keys[s.name]!.privateKey;
    if (s.kind === "grpc") {
      const trusted: Record<string, string[]> = {};
      for (const caller of s.callers) trusted[caller] = [keys[caller]!.publicKey];
      if (ADMIN_CALLEES.includes(s.name)) trusted.admin = [keys.admin!.publicKey];
      env.INTERNAL_AUTH_TRUSTED_KEYS = formatTrustedKeys(trusted);
    }
    envs[s.name] = env;
  }
  return envs;
}

/** The public surface's base URL on its HTTP port. */
export function publicBaseUrl(publicPort: number, host?: string): string {
  return `http://${host && host !== "0.0.0.0" ? host : HOST}:${publicPort}`;
}

/** The API's base URL on the gateway's port. */
export function gatewayBaseUrl(ports: Record<ServiceName, number>): string {
  return `http://${HOST}:${ports[GATEWAY.name]}/v1`;
}

/** How long a service gets to stop after SIGTERM (or its shutdown message) before it is killed. */
const STOP_GRACE_MS = 10_000;

export async function startStack<H extends Hosting>(o: StackOptions & { hosting: H }): Promise<Stack<H>> {
  const counts = replicaCounts(o.replicas);
  /** The port each service's callers (or clients, the gateway's) use: its first replica's, or its balancer's. */
  const ports = {} as Record<ServiceName, number>;
  for (const s of SERVICES) ports[s.name] = o.ports?.[s.name] ?? (await freePort());
  const publicPort = o.publicPort ?? (await freePort());
  /**
   * Each replica's own ports: a gRPC service's first replica listens on the service's port, the others on free
   * ports; the gateway's replicas (and the public surface's HTTP listeners), when several, all on free ports
   * behind their balancer.
   */
  const replicaPorts = {} as Record<ServiceName, number[]>;
  const replicaPublicPorts: number[] = [];
  for (const s of SERVICES) {
    const n = counts[s.name];
    const own: number[] = [];
    for (let i = 0; i < n; i++)
      own.push(s.kind === "grpc" && i === 0 ? ports[s.name] : n === 1 ? ports[s.name] : await freePort());
    replicaPorts[s.name] = own;
  }
  const publicReplicas = counts["public-surface"];
  for (let i = 0; i < publicReplicas; i++)
    replicaPublicPorts.push(publicReplicas === 1 ? publicPort : await freePort());
  const addresses = {} as Record<ServiceName, string>;
  for (const s of SERVICES)
    addresses[s.name] =
      counts[s.name] === 1
        ? `${HOST}:${ports[s.name]}`
        : `ipv4:${replicaPorts[s.name].map((p) => `${HOST}:${p}`).join(",")}`;
  const keys = o.keys ?? generateStackKeys();
  // Each replica's metrics listener on a port of its own: the first replica's is the service's.
  const metricsPorts = {} as Record<ServiceName, number>;
  const replicaMetricsPorts = {} as Record<ServiceName, number[]>;
  for (const s of SERVICES) {
    metricsPorts[s.name] = o.metricsPorts?.[s.name] ?? (await freePort());
    replicaMetricsPorts[s.name] = [metricsPorts[s.name]];
    for (let i = 1; i < counts[s.name]; i++) replicaMetricsPorts[s.name].push(await freePort());
  }
  const envs = serviceEnvs(o, ports, keys, publicPort, addresses, metricsPorts);
  for (const s of SERVICES) Object.assign(envs[s.name], o.serviceEnv?.[s.name]);
  /** The environment of replica `i` of a service: its own ports, and its id when there are several. */
  const replicaEnv = (name: ServiceName, i: number): Record<string, string> => {
    const s = byName(name);
    const env = { ...envs[name] };
    if (counts[name] === 1) return env;
    env.REPLICA_ID = replicaId(name, i, counts[name]);
    env.METRICS_PORT = String(replicaMetricsPorts[name][i]);
    if (s.kind === "grpc") env.GRPC_ADDR = `${HOST}:${replicaPorts[name][i]}`;
    else {
      env.HTTP_HOST = HOST;
      env.HTTP_PORT = String(replicaPorts[name][i]);
    }
    if (name === "public-surface") {
      env.PUBLIC_SURFACE_HTTP_HOST = HOST;
      env.PUBLIC_SURFACE_HTTP_PORT = String(replicaPublicPorts[i]);
    }
    return env;
  };
  const services = {} as Record<ServiceName, RunningService<H>>;
  for (const s of SERVICES)
    services[s.name] = {
      name: s.name,
      address: addresses[s.name],
      hosting: o.hosting,
      replicas: [],
      metricsUrl: `http://${HOST}:${metricsPorts[s.name]}/metrics`,
    } as unknown as RunningService<H>;
  const baseUrl = gatewayBaseUrl(ports);
  const built = await buildBundles();
  /** Replicas stopped or killed on purpose: the balancers hand them no new connection. */
  const held = new Set<string>();
  const accepting = (name: ServiceName) => (i: number) => {
    const r = services[name].replicas[i];
    return r !== undefined && r.unit.exit === undefined && !held.has(replicaId(name, i, counts[name]));
  };

  /** Starts replica `i` and waits until it is ready; one that is not ready in time is killed. */
  const launch = async (name: ServiceName, i: number): Promise<Unit> => {
    const s = byName(name);
    const id = replicaId(name, i, counts[name]);
    const own = `${HOST}:${replicaPorts[name][i]}`;
    const started = Date.now();
    const unit = launchUnit(o.hosting, {
      name: id,
      bundle: built[name]!,
      args: ["serve"],
      env: replicaEnv(name, i),
      logFile: o.logDir ? logFileOf(o.logDir, id) : undefined,
      nodeArgs: o.nodeArgs,
    });
    const replica: RunningReplica<H> = {
      index: i,
      id,
      address: own,
      process: unit.process as RunningReplica<H>["process"],
      unit,
      metricsUrl: `http://${HOST}:${replicaMetricsPorts[name][i]}/metrics`,
    };
    const service = services[name];
    service.replicas[i] = replica;
    if (i === 0) {
      service.process = replica.process;
      service.unit = unit;
      service.readyInMs = undefined;
    }
    try {
      // A machine that runs N replicas of each service starts N times as much: each gets N times the time.
      const timeoutMs = READY_TIMEOUT_MS * Math.max(...Object.values(counts));
      if (s.kind === "gateway") await waitFor(id, () => httpReady(`http://${own}/readyz`), unit, timeoutMs);
      else await waitFor(id, () => grpcServing(s, own), unit, timeoutMs);
      replica.readyInMs = Date.now() - started;
      if (i === 0) service.readyInMs = replica.readyInMs;
    } catch (err) {
      await unit.kill("SIGKILL");
      // What the service said before it died or while it did not answer.
      const said = o.logDir ? tailOf(logFileOf(o.logDir, id)) : "";
      if (err instanceof Error && said) err.message += `; the end of ${logFileOf(o.logDir!, id)}:\n${said}`;
      throw err;
    }
    held.delete(id);
    return unit;
  };
  /** Every replica's id, with its service and index (the supervisor watches replicas by id). */
  const replicaOf = new Map<string, { name: ServiceName; index: number }>();
  for (const s of SERVICES)
    for (let i = 0; i < counts[s.name]; i++)
      replicaOf.set(replicaId(s.name, i, counts[s.name]), { name: s.name, index: i });
  const indexes = (name: ServiceName) => [...Array(counts[name]).keys()];
  const supervisor = o.supervise
    ? new Supervisor(
        { ...DEFAULT_SUPERVISION, ...o.supervise.policy },
        (id) => {
          const r = replicaOf.get(id)!;
          return launch(r.name, r.index);
        },
        o.supervise.report,
      )
    : undefined;
  const stopReplica = async (name: ServiceName, i: number) => {
    const id = replicaId(name, i, counts[name]);
    supervisor?.pause(id);
    held.add(id);
    await services[name]?.replicas[i]?.unit.stop(STOP_GRACE_MS);
  };
  const killReplica = async (name: ServiceName, i: number, signal: NodeJS.Signals = "SIGKILL") => {
    const id = replicaId(name, i, counts[name]);
    supervisor?.pause(id);
    held.add(id);
    await services[name]?.replicas[i]?.unit.kill(signal);
  };
  const startReplica = async (name: ServiceName, i: number) => {
    const unit = await launch(name, i);
    supervisor?.watch(replicaId(name, i, counts[name]), unit);
  };
  const stopService = async (name: ServiceName) => {
    await Promise.all(indexes(name).map((i) => stopReplica(name, i)));
  };
  const killService = async (name: ServiceName, signal: NodeJS.Signals = "SIGKILL") => {
    await Promise.all(indexes(name).map((i) => killReplica(name, i, signal)));
  };

  /** The balancers in front of the HTTP listeners that run as several replicas. */
  const balancers: Partial<Record<"gateway" | "public", Balancer>> = {};
  const stop = async () => {
    supervisor?.stop();
    await stopService(GATEWAY.name);
    await Promise.all(Object.values(balancers).map((b) => b.close()));
    await Promise.all(GRPC_SERVICES.map((s) => stopService(s.name)));
  };

  try {
    // In waves: the first replica of every service at once (the stack as with one replica), then the second of
    // each, ...: a wave starts no more processes at once than one replica does, on a machine of two cores.
    const waves = Math.max(...GRPC_SERVICES.map((s) => counts[s.name]));
    for (let i = 0; i < waves; i++)
      await Promise.all(GRPC_SERVICES.filter((s) => counts[s.name] > i).map((s) => launch(s.name, i)));
    await Promise.all(indexes(GATEWAY.name).map((i) => launch(GATEWAY.name, i)));
    const front = async (key: "gateway" | "public", name: ServiceName, port: number, own: number[]) => {
      if (own.length === 1) return;
      balancers[key] = await startBalancer({
        host: o.gatewayHost ?? HOST,
        port,
        backends: own.map((p) => ({ host: HOST, port: p })),
        accepting: accepting(name),
      });
    };
    await front("gateway", GATEWAY.name, ports[GATEWAY.name], replicaPorts[GATEWAY.name]);
    await front("public", "public-surface", publicPort, replicaPublicPorts);
    if (balancers.gateway)
      await waitFor(
        "the gateway's balancer",
        () => httpReady(`http://${HOST}:${ports[GATEWAY.name]}/readyz`),
        services[GATEWAY.name].unit,
      );
  } catch (err) {
    await Promise.all(Object.values(balancers).map((b) => b.close()));
    await Promise.all(SERVICES.map((s) => stopService(s.name)));
    throw err;
  }
  for (const s of SERVICES)
    for (const i of indexes(s.name))
      supervisor?.watch(replicaId(s.name, i, counts[s.name]), services[s.name].replicas[i]!.unit);

  return {
    hosting: o.hosting,
    baseUrl,
    publicUrl: envs["public-surface"].PUBLIC_BASE_URL!,
    resolverUrl: envs["public-surface"].RESOLVER_BASE_URL!,
    adminKey: keys.admin!.privateKey,
    gatewayPort: ports[GATEWAY.name],
    services,
    stopService,
    killService,
    startService: async (name: ServiceName, so?: { env?: Record<string, string> }) => {
      // Variables given here replace the service's own from now on (its restarts by the supervisor included).
      if (so?.env) envs[name] = { ...envs[name], ...so.env };
      await Promise.all(indexes(name).map((i) => startReplica(name, i)));
    },
    killReplica,
    stopReplica,
    startReplica,
    balanced: Object.fromEntries(Object.entries(balancers).map(([k, b]) => [k, b.handed])),
    stop,
  };
}
