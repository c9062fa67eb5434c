/**
 * SIGTERM drains a service (service.ts, the drain): a real process of a service (support/drain-service.ts) is
 * sent SIGTERM with a call in flight; its health turns NOT_SERVING at once, its job and drain hook stop taking
 * work, the call in flight is answered, and the process exits 0.
 */
import { spawn, type ChildProcess } from "node:child_process";
import path from "node:path";
import { healthV1, passportV1 } from "@dpp/proto";
import {
  createTestDatabase,
  formatTrustedKeys,
  generateInternalKeyPair,
  tenantContext,
  type TestDatabase,
} from "../../src/testing";
import { createClient, createHealthClient } from "../../src/grpc";
import { createContextSigner } from "../../src/internal-auth";

const SCRIPT = path.join(__dirname, "..", "support", "drain-service.ts");
const { SERVING, NOT_SERVING } = healthV1.HealthCheckResponse_ServingStatus;

interface Line {
  msg: string;
  port?: number;
}

function run(args: string[], env: Record<string, string>) {
  const lines: Line[] = [];
  const child = spawn(process.execPath, ["--import", "tsx", SCRIPT, ...args], {
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let rest = "";
  child.stdout.on("data", (chunk: Buffer) => {
    const parts = (rest + chunk.toString()).split("\n");
    rest = parts.pop() ?? "";
    for (const p of parts)
      try {
        const o = JSON.parse(p) as { msg: string; port?: number };
        lines.push({ msg: o.msg, port: o.port });
      } catch {
        // not a log line
      }
  });
  let stderr = "";
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  return { child, lines, exited, stderr: () => stderr };
}

async function until<T>(check: () => T | undefined, timeoutMs = 20_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = check();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error("condition not met in time");
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe("SIGTERM drains a service", () => {
  let database: TestDatabase;
  let child: ChildProcess | undefined;
  const caller = generateInternalKeyPair();

  beforeAll(async () => {
    database = await createTestDatabase("drain");
  });
  afterAll(async () => {
    child?.kill("SIGKILL");
    await database.drop();
  });

  it("turns health NOT_SERVING, stops its jobs and consumers, finishes the call in flight, then exits", async () => {
    const env = {
      DATABASE_URL: database.url,
      GRPC_ADDR: "127.0.0.1:0",
      INTERNAL_AUTH_TRUSTED_KEYS: formatTrustedKeys({ gateway: [caller.publicKey] }),
      LOG_LEVEL: "info",
      HOLD_MS: "1500",
      SHUTDOWN_DRAIN_DELAY_MS: "600",
      SHUTDOWN_GRACE_MS: "5000",
      OTEL_SDK_DISABLED: "true",
    };
    const migrate = run(["migrate"], env);
    expect(await migrate.exited).toBe(0);

    const service = run(["serve"], env);
    child = service.child;
    const port = await until(() => service.lines.find((l) => l.msg === "grpc server listening")?.port);
    const target = `127.0.0.1:${port}`;
    const health = createHealthClient(target);
    const client = createClient(passportV1.PassportService, target, {
      signer: createContextSigner({ issuer: "gateway", privateKey: caller.privateKey }),
      audience: "passport",
      deadlineMs: 10_000,
    });
    try {
      expect(await health.check("")).toBe(SERVING);
      await until(() => service.lines.find((l) => l.msg === "job pass"));

      const inFlight = client
        .getPassport({ id: "pp_1" }, { context: tenantContext() })
        .then(() => Date.now());
      await until(() => service.lines.find((l) => l.msg === "call started"));
      const sentAt = Date.now();
      service.child.kill("SIGTERM");

      // Readiness goes first: NOT_SERVING while the call is still being worked on.
      let notServingAt: number | undefined;
      while (notServingAt === undefined) {
        if ((await health.check("").catch(() => undefined)) === NOT_SERVING) notServingAt = Date.now();
        else if (Date.now() - sentAt > 5000) throw new Error("health never turned NOT_SERVING");
        else await new Promise((r) => setTimeout(r, 20));
      }
      const answeredAt = await inFlight;
      expect(notServingAt).toBeLessThan(answeredAt);
      expect(await service.exited).toBe(0);

      const order = service.lines.map((l) => l.msg);
      const draining = order.indexOf("draining: not ready, taking no new work");
      expect(draining).toBeGreaterThan(0);
      expect(order.indexOf("drain hook ran")).toBeGreaterThan(draining);
      // No job pass began once the drain started (a pass logs as it begins).
      expect(order.lastIndexOf("job pass")).toBeLessThan(draining);
      // The call was answered after the drain began, before the process left.
      expect(order.indexOf("call answered")).toBeGreaterThan(draining);
    } finally {
      client.close();
      health.close();
    }
  });
});
