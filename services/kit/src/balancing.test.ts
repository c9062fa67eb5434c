/**
 * Calls spread over a service's replicas (docs/decisions/0061-grpc-load-balancing.md): real gRPC servers of one
 * service on their own ports, and the kit's client in front of them.
 */
import { passportV1 } from "@dpp/proto";
import { createClient } from "./grpc";
import { defineService, serviceConfigSchema } from "./service";
import { createContextSigner, generateInternalKeyPair } from "./internal-auth";
import { tenantContext } from "./testing-contexts";
import { replica, TestResolver, type Replica } from "./testing-replicas";

const signer = createContextSigner({ issuer: "gateway", privateKey: generateInternalKeyPair().privateKey });
const opened: Array<{ close(): void }> = [];
const started: Replica[] = [];

function client(target: string) {
  const c = createClient(passportV1.PassportService, target, { signer, audience: "passport", deadlineMs: 3000 });
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
