/**
 * Replicas of the local stack (README, "Replicas"; docs/decisions/0062-local-replicas.md): the TCP balancer in
 * front of the gateway's replicas, the settings that ask for replicas, and a stack as `npm start` runs it
 * (threads) with two replicas of the gateway and of passport behind the gateway's one port, supervised per
 * replica.
 */
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { createTestDatabase, type TestDatabase } from "@dpp/kit/testing";
import { startBalancer } from "../src/balancer";
import { ensureDemoCredentials } from "../src/demo";
import { replicasFromEnv } from "../src/ports";
import { freePort, migrateAll, replicaCounts, startStack, type SupervisionEvent } from "../src/stack";

jest.setTimeout(120_000);

/** A TCP server that answers each connection with its name and closes it. */
async function namedServer(name: string): Promise<{ port: number; close: () => Promise<void> }> {
  const server = net.createServer((s) => s.end(name));
  const port = await freePort();
  await new Promise<void>((r) => server.listen(port, "127.0.0.1", () => r()));
  return { port, close: () => new Promise<void>((r) => server.close(() => r())) };
}

/** What one connection to `port` reads before its end ("" when it is reset). */
function readOnce(port: number): Promise<string> {
  return new Promise((resolve) => {
    let text = "";
    const s = net.connect(port, "127.0.0.1");
    s.on("data", (d: Buffer) => (text += d.toString()));
    s.once("end", () => resolve(text));
    s.once("error", () => resolve(""));
  });
}

describe("the balancer", () => {
  it("hands connections to the replicas in turn, skipping one that refuses them or is held back", async () => {
    const a = await namedServer("a");
    const b = await namedServer("b");
    const gone = await freePort(); // nothing listens there: a replica that died
    let holdB = false;
    const balancer = await startBalancer({
      host: "127.0.0.1",
      port: await freePort(),
      backends: [a, b, { port: gone }].map((s) => ({ host: "127.0.0.1", port: s.port })),
      accepting: (i) => !(i === 1 && holdB),
    });
    try {
      const answers: string[] = [];
      for (let i = 0; i < 6; i++) answers.push(await readOnce(balancer.port));
      expect(answers.every((x) => x === "a" || x === "b")).toBe(true);
      expect(answers.filter((x) => x === "a").length).toBeGreaterThanOrEqual(2);
      expect(answers.filter((x) => x === "b").length).toBeGreaterThanOrEqual(2);
      expect(balancer.handed[2]).toBe(0);
      holdB = true;
      const held: string[] = [];
      for (let i = 0; i < 4; i++) held.push(await readOnce(balancer.port));
      expect(held).toEqual(["a", "a", "a", "a"]);
    } finally {
      await balancer.close();
      await a.close();
      await b.close();
    }
  });

  it("resets a connection when no replica takes it", async () => {
    const balancer = await startBalancer({
      host: "127.0.0.1",
      port: await freePort(),
      backends: [{ host: "127.0.0.1", port: await freePort() }],
      accepting: () => true,
    });
    try {
      expect(await readOnce(balancer.port)).toBe("");
    } finally {
      await balancer.close();
    }
  });
});

describe("the settings", () => {
  it("read DPP_REPLICAS and <NAME>_REPLICAS, 1 by default, and refuse anything but 1 to 16", () => {
    expect(replicasFromEnv({}).passport).toBe(1);
    const counts = replicasFromEnv({
      DPP_REPLICAS: "2",
      GATEWAY_REPLICAS: "1",
      PUBLIC_SURFACE_REPLICAS: "3",
    });
    expect(counts).toMatchObject({ passport: 2, events: 2, gateway: 1, "public-surface": 3 });
    expect(() => replicasFromEnv({ DPP_REPLICAS: "0" })).toThrow(/DPP_REPLICAS must be a whole number/);
    expect(() => replicasFromEnv({ PASSPORT_REPLICAS: "two" })).toThrow(/PASSPORT_REPLICAS/);
    expect(replicaCounts(undefined).gateway).toBe(1);
    expect(replicaCounts({ passport: 3 })).toMatchObject({ passport: 3, gateway: 1 });
    expect(() => replicaCounts(17)).toThrow(/from 1 to 16/);
  });
});

describe("a stack of threads with two replicas of the gateway and of passport", () => {
  let db: TestDatabase;
  let logDir: string;
  beforeAll(async () => {
    db = await createTestDatabase("stack_replicas");
    logDir = fs.mkdtempSync(path.join(os.tmpdir(), "dpp-replicas-"));
    await migrateAll(db.url, logDir, "threads");
  });
  afterAll(async () => {
    await db?.drop();
    if (logDir) fs.rmSync(logDir, { recursive: true, force: true });
  });

  it("answers through the gateway's one port from both replicas, and restarts a replica that dies", async () => {
    const events: SupervisionEvent[] = [];
    const stack = await startStack({
      hosting: "threads",
      databaseUrl: db.url,
      logDir,
      logLevel: "info",
      replicas: { gateway: 2, passport: 2 },
      env: { DB_POOL_MAX: "2", DB_POOL_IDLE_MS: "1000" },
      supervise: { policy: { initialBackoffMs: 100 }, report: (e) => events.push(e) },
    });
    try {
      const [p1, p2] = stack.services.passport.replicas.map((r) => r.address);
      expect(stack.services.passport.address).toBe(`ipv4:${p1},${p2}`);
      expect(stack.services.events.replicas).toHaveLength(1);
      expect(stack.services.gateway.replicas.map((r) => r.id)).toEqual(["gateway-1", "gateway-2"]);
      const creds = await ensureDemoCredentials(db.url, path.join(logDir, "credentials.json"), stack.baseUrl);
      const list = () =>
        fetch(`${stack.baseUrl}/organizations/${creds.organization_id}/passports`, {
          headers: { authorization: `Bearer ${creds.test_key}`, connection: "close" },
        });
      for (let i = 0; i < 6; i++) expect((await list()).status).toBe(200);
      expect(stack.balanced.gateway!.every((n) => n >= 2)).toBe(true);

      // A replica's thread dies: the other answers meanwhile, and the supervisor starts it again.
      await stack.services.gateway.replicas[0]!.unit.worker!.terminate();
      for (let i = 0; i < 4; i++) expect((await list()).status).toBe(200);
      for (let i = 0; i < 300 && !events.some((e) => e.kind === "restarted"); i++)
        await new Promise((r) => setTimeout(r, 100));
      expect(events.map((e) => `${e.kind} ${e.service}`)).toEqual(["died gateway-1", "restarted gateway-1"]);
      expect(stack.services.gateway.replicas[0]!.unit.exit).toBeUndefined();

      // Each replica writes its own log, every line naming it.
      for (const id of ["gateway-1", "gateway-2", "passport-1", "passport-2"]) {
        const lines = fs
          .readFileSync(path.join(logDir, `${id}.log`), "utf8")
          .split("\n")
          .filter((l) => l.startsWith("{"))
          .map((l) => JSON.parse(l) as { replica?: string });
        expect(lines.length).toBeGreaterThan(0);
        expect(new Set(lines.map((l) => l.replica))).toEqual(new Set([id]));
      }
      expect(fs.existsSync(path.join(logDir, "events.log"))).toBe(true);
    } finally {
      await stack.stop();
    }
  });
});
