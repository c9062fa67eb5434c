/**
 * The local stack as `npm start` runs it by default: every service in a worker thread of one process, from the
 * bundles, against a real Postgres. Each service starts, answers through the gateway, writes its own log file,
 * and stops on its shutdown message, leaving no process, thread or listener behind; a service that fails at
 * start is reported with the end of its log. And the embedded Postgres does not outlive a stack process that is
 * killed (kill -9), which no thread can see happen.
 */
import { spawn } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { createTestDatabase, type TestDatabase } from "@dpp/kit/testing";
import { ensureDemoCredentials } from "../src/demo";
import { loadRegistry, migrateAll, REPO_ROOT, startStack, type ServiceName, type Stack } from "../src/stack";

jest.setTimeout(120_000);

let db: TestDatabase;
let logDir: string;

beforeAll(async () => {
  db = await createTestDatabase("stack_threads");
  logDir = fs.mkdtempSync(path.join(os.tmpdir(), "dpp-threads-"));
  await migrateAll(db.url, logDir, "threads");
});
afterAll(async () => {
  await db?.drop();
  if (logDir) fs.rmSync(logDir, { recursive: true, force: true });
});

/** The processes whose parent is this one. */
function children(): number[] {
  return fs
    .readdirSync("/proc")
    .filter((d) => /^\d+$/.test(d))
    .filter((d) => {
      try {
        const stat = fs.readFileSync(`/proc/${d}/stat`, "utf8");
        return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]) === process.pid;
      } catch {
        return false;
      }
    })
    .map(Number);
}

/** Whether something accepts connections on 127.0.0.1:port. */
function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, "127.0.0.1");
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

const portOf = (address: string) => Number(address.split(":")[1]);

it("runs every service in a thread of this process, answers through the gateway, and stops leaving nothing behind", async () => {
  const before = children();
  const stack: Stack<"threads"> = await startStack({
    hosting: "threads",
    databaseUrl: db.url,
    logDir,
    logLevel: "info",
    env: { DB_POOL_MAX: "2", DB_POOL_IDLE_MS: "1000" },
  });
  const names = Object.keys(stack.services) as ServiceName[];
  try {
    expect(names.sort()).toEqual(
      loadRegistry()
        .map((s) => s.name)
        .sort(),
    );
    for (const s of Object.values(stack.services)) {
      expect(s.hosting).toBe("threads");
      expect(s.process).toBeUndefined();
      expect(s.unit.pid).toBe(process.pid);
      expect(s.unit.threadId).toBeGreaterThan(0);
      expect(s.unit.exit).toBeUndefined();
    }
    // No service is a process of its own.
    expect(children()).toEqual(before);

    // The gateway answers, and reaches passport and events over gRPC between threads.
    const credsFile = path.join(logDir, "credentials.json");
    const creds = await ensureDemoCredentials(db.url, credsFile, stack.baseUrl);
    const get = (p: string) =>
      fetch(`${stack.baseUrl}${p}`, { headers: { authorization: `Bearer ${creds.test_key}` } });
    expect((await get("/categories")).status).toBe(200);
    expect((await get(`/organizations/${creds.organization_id}/passports`)).status).toBe(200);
    expect((await get(`/organizations/${creds.organization_id}/events`)).status).toBe(200);

    // Each service wrote its own log file, every line of it its own.
    for (const name of names) {
      const lines = fs
        .readFileSync(path.join(logDir, `${name}.log`), "utf8")
        .split("\n")
        .filter(Boolean);
      const own = lines.filter((l) => l.startsWith("{")).map((l) => JSON.parse(l) as { service: string });
      expect(own.length).toBeGreaterThan(0);
      expect(new Set(own.map((l) => l.service))).toEqual(new Set([name]));
    }
  } finally {
    await stack.stop();
  }

  // Each thread ended by its own graceful shutdown, and nothing listens on the stack's ports any more.
  for (const s of Object.values(stack.services)) expect(s.unit.exit).toBe("code 0");
  for (const s of Object.values(stack.services)) expect(await listening(portOf(s.address))).toBe(false);
  expect(await listening(stack.gatewayPort)).toBe(false);
  expect(children()).toEqual(before);
  const gatewayLog = fs.readFileSync(path.join(logDir, "gateway.log"), "utf8");
  expect(gatewayLog).toMatch(/"signal":"shutdown message".*"msg":"shutting down"/);
});

it("reports a service that fails at start with the end of its log", async () => {
  const started = startStack({
    hosting: "threads",
    databaseUrl: db.url,
    logDir,
    env: { RELAY_INTERVAL_MS: "none" },
  });
  // The fatal line, written by the thread just before it exited, is in the report (whichever gRPC service
  // failed first).
  const grpc = loadRegistry()
    .filter((s) => s.kind === "grpc")
    .map((s) => s.name)
    .join("|");
  await expect(started).rejects.toThrow(
    new RegExp(
      `(${grpc}) exited \\(code 2\\) while starting; the end of .*\\.log:\\n.*Invalid configuration.*RELAY_INTERVAL_MS`,
      "s",
    ),
  );
});

it("stops the embedded Postgres when the process that started it is killed", async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "dpp-pgwatch-"));
  // As root, the server runs as the postgres user, who must reach the data directory.
  fs.chmodSync(dir, 0o755);
  const script = `
    const { startEmbeddedPostgres } = require(${JSON.stringify(path.join(REPO_ROOT, "tools/stack/src/embedded-postgres.ts"))});
    startEmbeddedPostgres(${JSON.stringify(dir)}).then(() => console.log("started"), (e) => { console.error(e); process.exit(1); });
    setInterval(() => {}, 1000);`;
  const child = spawn(process.execPath, ["--import", "tsx", "-e", script], {
    cwd: REPO_ROOT,
    stdio: ["ignore", "pipe", "inherit"],
  });
  try {
    await new Promise<void>((resolve, reject) => {
      child.stdout!.on("data", (chunk: Buffer) => {
        if (chunk.toString().includes("started")) resolve();
      });
      child.once("exit", (code) => reject(new Error(`the Postgres starter exited (code ${code})`)));
    });
    const pidFile = path.join(dir, "pgdata", "postmaster.pid");
    const postmaster = Number(fs.readFileSync(pidFile, "utf8").split("\n")[0]);
    expect(fs.existsSync(`/proc/${postmaster}`)).toBe(true);

    child.kill("SIGKILL");
    // The server shuts down by itself (fast shutdown: it removes its pid file); polled until it has.
    for (let i = 0; i < 600 && fs.existsSync(`/proc/${postmaster}`); i++)
      await new Promise((r) => setTimeout(r, 100));
    expect(fs.existsSync(`/proc/${postmaster}`)).toBe(false);
    expect(fs.existsSync(pidFile)).toBe(false);
  } finally {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
