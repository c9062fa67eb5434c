/**
 * The local stack: every service as its own process, talking gRPC, against one
 * Postgres (embedded when no DATABASE_URL is given). Used by `npm start` and by
 * the e2e tests.
 */
import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import { createClient, type Logger } from "@dpp/kit";
import { healthV1 } from "@dpp/proto";

export const REPO_ROOT = path.resolve(__dirname, "../../..");

export type ServiceName = "passport" | "events" | "gateway";

export interface StackOptions {
  /** Postgres to use; every service gets its own schema in it. */
  databaseUrl: string;
  gatewayPort?: number;
  gatewayHost?: string;
  passportPort?: number;
  eventsPort?: number;
  /** Where each service's output goes; undefined → this process's stdout with a prefix. */
  logDir?: string;
  logLevel?: string;
  env?: Record<string, string>;
  log?: Pick<Logger, "info" | "warn" | "error">;
}

export interface RunningService {
  name: ServiceName;
  address: string;
  process: ChildProcess;
}

export interface Stack {
  baseUrl: string;
  gatewayPort: number;
  services: Record<ServiceName, RunningService>;
  /** Stops one service (SIGTERM, then SIGKILL after the grace period). */
  stopService(name: ServiceName): Promise<void>;
  /** Sends a signal (SIGKILL by default: a crash, no cleanup) and waits for the process to exit. */
  killService(name: ServiceName, signal?: NodeJS.Signals): Promise<void>;
  /** Starts a stopped service again on the same address. */
  startService(name: ServiceName): Promise<void>;
  stop(): Promise<void>;
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const addr = srv.address() as net.AddressInfo;
      srv.close(() => resolve(addr.port));
    });
  });
}

function entry(name: ServiceName): string {
  return path.join(REPO_ROOT, "services", name, "src", "main.ts");
}

function spawnService(
  name: ServiceName,
  args: string[],
  env: Record<string, string>,
  logDir?: string,
): ChildProcess {
  const child = spawn(process.execPath, ["--import", "tsx", entry(name), ...args], {
    cwd: REPO_ROOT,
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  if (logDir) {
    fs.mkdirSync(logDir, { recursive: true });
    const out = fs.createWriteStream(path.join(logDir, `${name}.log`), { flags: "a" });
    child.stdout!.pipe(out);
    child.stderr!.pipe(out);
  } else {
    const prefix = `[${name}] `.padEnd(11);
    const relay = (stream: NodeJS.WritableStream) => (chunk: Buffer) => {
      for (const line of chunk.toString().split("\n")) if (line) stream.write(prefix + line + "\n");
    };
    child.stdout!.on("data", relay(process.stdout));
    child.stderr!.on("data", relay(process.stderr));
  }
  return child;
}

function waitExit(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve) => child.once("exit", (code) => resolve(code)));
}

/** Runs `<service> migrate` as its own process, as the Helm migrations Job does. */
export async function migrateAll(databaseUrl: string, logDir?: string): Promise<void> {
  for (const name of ["gateway", "passport", "events"] as ServiceName[]) {
    const child = spawnService(name, ["migrate"], { DATABASE_URL: databaseUrl, LOG_LEVEL: "warn" }, logDir);
    const code = await waitExit(child);
    if (code !== 0) throw new Error(`migrations of ${name} failed (exit ${code})`);
  }
}

async function waitFor(what: string, check: () => Promise<boolean>, child: ChildProcess, timeoutMs = 30000) {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    if (child.exitCode !== null) throw new Error(`${what} exited with code ${child.exitCode} while starting`);
    if (await check().catch(() => false)) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${what} did not become ready within ${timeoutMs} ms`);
}

async function grpcServing(address: string): Promise<boolean> {
  const client = createClient(healthV1.Health, address, { deadlineMs: 1000 });
  try {
    const res = await client.check({ service: "" }, { context: { requestId: "req_stack_probe" } });
    return res.status === healthV1.HealthCheckResponse_ServingStatus.SERVING;
  } finally {
    client.close();
  }
}

async function httpReady(url: string): Promise<boolean> {
  const res = await fetch(url);
  return res.ok;
}

export async function startStack(o: StackOptions): Promise<Stack> {
  const host = "127.0.0.1";
  const ports = {
    passport: o.passportPort ?? (await freePort()),
    events: o.eventsPort ?? (await freePort()),
    gateway: o.gatewayPort ?? (await freePort()),
  };
  const addr = (n: "passport" | "events") => `${host}:${ports[n]}`;
  const common = { DATABASE_URL: o.databaseUrl, LOG_LEVEL: o.logLevel ?? "info", ...o.env };
  const envs: Record<ServiceName, Record<string, string>> = {
    passport: { ...common, GRPC_ADDR: addr("passport") },
    events: { ...common, GRPC_ADDR: addr("events") },
    gateway: {
      ...common,
      HTTP_HOST: o.gatewayHost ?? host,
      HTTP_PORT: String(ports.gateway),
      PASSPORT_ADDR: addr("passport"),
      EVENTS_ADDR: addr("events"),
    },
  };
  const services = {} as Record<ServiceName, RunningService>;
  const baseUrl = `http://${host}:${ports.gateway}/v1`;

  const start = async (name: ServiceName) => {
    const child = spawnService(name, ["serve"], envs[name], o.logDir);
    const address = name === "gateway" ? `${host}:${ports.gateway}` : addr(name);
    services[name] = { name, address, process: child };
    if (name === "gateway")
      await waitFor(name, () => httpReady(`http://${host}:${ports.gateway}/readyz`), child);
    else await waitFor(name, () => grpcServing(address), child);
  };
  const stopService = async (name: ServiceName) => {
    const child = services[name]?.process;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    child.kill("SIGTERM");
    const killer = setTimeout(() => child.kill("SIGKILL"), 10000);
    await waitExit(child);
    clearTimeout(killer);
  };

  const killService = async (name: ServiceName, signal: NodeJS.Signals = "SIGKILL") => {
    const child = services[name]?.process;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    child.kill(signal);
    await waitExit(child);
  };

  try {
    await Promise.all([start("passport"), start("events")]);
    await start("gateway");
  } catch (err) {
    await Promise.all((Object.keys(services) as ServiceName[]).map(stopService));
    throw err;
  }

  return {
    baseUrl,
    gatewayPort: ports.gateway,
    services,
    stopService,
    killService,
    startService: start,
    stop: async () => {
      await stopService("gateway");
      await Promise.all([stopService("passport"), stopService("events")]);
    },
  };
}
