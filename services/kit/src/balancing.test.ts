/**
 * Calls spread over a service's replicas (docs/decisions/0061-grpc-load-balancing.md): real gRPC servers of one
 * service on their own ports, and the kit's client in front of them.
 */
import { passportV1 } from "@dpp/proto";
import { createClient } from "./grpc";
import { defineService, serviceConfigSchema } from "./service";
import { createContextSigner, generateInternalKeyPair } from "./internal-auth";
import { keyedContext, tenantContext } from "./testing-contexts";
import { replica, TestResolver, type Replica } from "./testing-replicas";

const signer = createContextSigner({ issuer: "gateway", privateKey: generateInternalKeyPair().privateKey });
const opened: Array<{ close(): void }> = [];
const started: Replica[] = [];

function client(target: string) {
  const c = createClient(passportV1.PassportService, target, {
    signer,
    audience: "passport",
    deadlineMs: 3000,
  });
  opened.push(c);
  return c;
}

async function start(name: string, o: Parameters<typeof replica>[1] = {}): Promise<Replica> {
  const r = await replica(name, o);
  started.push(r);
  return r;
}

const read = (c: ReturnType<typeof client>) => c.getPassport({ id: "pp_1" }, { context: tenantContext() });

afterEach(async () => {
  for (const c of opened.splice(0)) c.close();
  await Promise.all(started.splice(0).map((r) => r.stop()));
});

describe("round-robin over every address of a service", () => {
  it("spreads a client's calls over both replicas of an ipv4: list", async () => {
    const a = await start("a");
    const b = await start("b");
    const c = client(`ipv4:127.0.0.1:${a.port},127.0.0.1:${b.port}`);
    for (let i = 0; i < 20; i++) await read(c);
    expect(a.calls.length + b.calls.length).toBe(20);
    // Round-robin: once both connections are up, calls alternate; the first may find only one connected.
    expect(a.calls.length).toBeGreaterThanOrEqual(8);
    expect(b.calls.length).toBeGreaterThanOrEqual(8);
  });

  it("spreads calls made at once over both replicas, as a plain host:port does over the addresses of its name", async () => {
    const a = await start("a");
    const b = await start("b");
    const c = client(`ipv4:127.0.0.1:${a.port},127.0.0.1:${b.port}`);
    await read(c); // connected
    await Promise.all(Array.from({ length: 40 }, () => read(c)));
    expect(a.calls.length).toBeGreaterThanOrEqual(15);
    expect(b.calls.length).toBeGreaterThanOrEqual(15);
  });

  it("takes a plain host:port as a DNS name (dns:///host:port) and reaches the service", async () => {
    const a = await start("a");
    const c = client(`localhost:${a.port}`);
    await read(c);
    await read(c);
    expect(a.calls).toEqual(["GetPassport", "GetPassport"]);
  });
});

describe("connections capped in age (GRPC_MAX_CONNECTION_AGE_MS)", () => {
  // A name whose addresses change as a Service's pods do: the resolver answers its current list when grpc-js
  // resolves it again (after a connection closed), as DNS does.
  const resolver = TestResolver.register("kittest-scale");

  it("makes a client reconnect, resolve again and spread its calls onto a replica started later", async () => {
    const a = await start("a", { maxConnectionAgeMs: 300, maxConnectionAgeGraceMs: 1000 });
    resolver.set("passport", [a.port]);
    const c = client("kittest-scale:///passport");
    for (let i = 0; i < 5; i++) await read(c);
    expect(a.calls.length).toBe(5);

    // Scale-up: a second replica joins the name; the client's open connection does not see it by itself.
    const b = await start("b", { maxConnectionAgeMs: 300, maxConnectionAgeGraceMs: 1000 });
    resolver.set("passport", [a.port, b.port]);
    const deadline = Date.now() + 10_000;
    while (b.calls.length === 0 && Date.now() < deadline) {
      await read(c);
      await new Promise((r) => setTimeout(r, 20));
    }
    expect(b.calls.length).toBeGreaterThan(0);
    // Now both take calls.
    a.calls.length = 0;
    b.calls.length = 0;
    for (let i = 0; i < 20; i++) await read(c);
    expect(a.calls.length).toBeGreaterThanOrEqual(8);
    expect(b.calls.length).toBeGreaterThanOrEqual(8);
  });

  it("without an age cap, a client's connection never learns of the replica started later", async () => {
    const a = await start("a", { maxConnectionAgeMs: 3_600_000 });
    resolver.set("stay", [a.port]);
    const c = client("kittest-scale:///stay");
    await read(c);
    const b = await start("b");
    resolver.set("stay", [a.port, b.port]);
    const until = Date.now() + 1500;
    while (Date.now() < until) {
      await read(c);
      await new Promise((r) => setTimeout(r, 20));
    }
    expect(b.calls.length).toBe(0);
  });

  it("sets the cap on every server from GRPC_MAX_CONNECTION_AGE_MS / _GRACE_MS, 5 minutes and 30 s by default", async () => {
    const def = defineService({
      name: "sample",
      schema: "sample",
      migrations: {},
      env: {},
      grpcPort: 50999,
      start: () => undefined,
    });
    const base = { DATABASE_URL: "postgres://localhost/x" };
    const defaults = serviceConfigSchema(def).parse(base);
    expect([defaults.GRPC_MAX_CONNECTION_AGE_MS, defaults.GRPC_MAX_CONNECTION_AGE_GRACE_MS]).toEqual([
      300_000, 30_000,
    ]);
    const set = serviceConfigSchema(def).parse({
      ...base,
      GRPC_MAX_CONNECTION_AGE_MS: "60000",
      GRPC_MAX_CONNECTION_AGE_GRACE_MS: "5000",
    });
    expect([set.GRPC_MAX_CONNECTION_AGE_MS, set.GRPC_MAX_CONNECTION_AGE_GRACE_MS]).toEqual([60_000, 5_000]);
  });
});

describe("calls sent again when a replica is unavailable", () => {
  /**
   * Two connected replicas; the next call of `method` is held by whichever receives it, and that replica is then
   * killed with the call in flight (a pod gone). Returns the call's outcome and both replicas.
   */
  async function callDroppedInFlight(
    method: string,
    send: (c: ReturnType<typeof client>) => Promise<unknown>,
  ) {
    let armed = false;
    const behaviour = (m: string) => {
      if (armed && m === method) {
        armed = false;
        return "hold" as const;
      }
      return "answer" as const;
    };
    const a = await start("a", { behaviour });
    const b = await start("b", { behaviour });
    const c = client(`ipv4:127.0.0.1:${a.port},127.0.0.1:${b.port}`);
    for (let i = 0; i < 4; i++) await read(c); // both connected
    a.calls.length = 0;
    b.calls.length = 0;
    armed = true;
    const outcome = send(c).then(
      (value) => ({ ok: true as const, value }),
      (error: unknown) => ({ ok: false as const, error }),
    );
    const holder = await Promise.race([a.nextHeld().then(() => a), b.nextHeld().then(() => b)]);
    holder.kill();
    const other = holder === a ? b : a;
    return { outcome: await outcome, holder, other };
  }

  it("sends a read again, and the other replica answers it", async () => {
    const { outcome, holder, other } = await callDroppedInFlight("GetPassport", read);
    expect(outcome.ok).toBe(true);
    expect(holder.calls).toEqual(["GetPassport"]);
    expect(other.calls).toEqual(["GetPassport"]);
  });

  it("sends a write under an Idempotency-Key again (it runs once per key)", async () => {
    const { outcome, holder, other } = await callDroppedInFlight("CreatePassport", (c) =>
      c.createPassport({ category: "textile" }, { context: keyedContext() }),
    );
    expect(outcome.ok).toBe(true);
    expect(holder.calls).toEqual(["CreatePassport"]);
    expect(other.calls).toEqual(["CreatePassport"]);
  });

  it("never sends a write without a key again: its outcome is unknown to the caller", async () => {
    const { outcome, holder, other } = await callDroppedInFlight("CreatePassport", (c) =>
      c.createPassport({ category: "textile" }, { context: tenantContext() }),
    );
    expect(outcome.ok).toBe(false);
    expect(outcome.ok || outcome.error).toMatchObject({
      code: "internal_error",
      details: { reason: "outcome_unknown", service: "passport" },
    });
    expect(holder.calls).toEqual(["CreatePassport"]);
    expect(other.calls).toEqual([]);
  });

  it("does not send a read again when the service itself answered 503 (its refusal is the caller's to see)", async () => {
    const a = await start("a", { behaviour: () => "refuse" });
    const b = await start("b", { behaviour: () => "refuse" });
    const c = client(`ipv4:127.0.0.1:${a.port},127.0.0.1:${b.port}`);
    await expect(read(c)).rejects.toMatchObject({ code: "storage_unavailable" });
    expect(a.calls.length + b.calls.length).toBe(1);
  });

  it("sends a read again within its deadline only, and fails it when no replica answers", async () => {
    const a = await start("a");
    const port = a.port;
    await a.stop();
    const c = createClient(passportV1.PassportService, `ipv4:127.0.0.1:${port}`, {
      signer,
      audience: "passport",
      deadlineMs: 300,
      retry: { maxAttempts: 10, backoffMs: 50 },
    });
    opened.push(c);
    const startedAt = Date.now();
    await expect(read(c)).rejects.toMatchObject({
      code: "internal_error",
      details: { reason: "upstream_unavailable", service: "passport" },
    });
    // Ten attempts with doubling backoff would take 25 s; the deadline ends them.
    expect(Date.now() - startedAt).toBeLessThan(300 + 2500);
  });
});
