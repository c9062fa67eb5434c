/**
 * What the local stack hands each service: listen addresses on 127.0.0.1 only,
 * and the <NAME>_ADDR of exactly the services that list it among their callers
 * (services.json).
 */
import { loadRegistry, type ServiceName } from "../../registry";
import { portsFromEnv } from "../src/ports";
import { generateStackKeys, serviceEnvs } from "../src/stack";

const registry = loadRegistry();
const ports = Object.fromEntries(registry.map((s, i) => [s.name, 41000 + i])) as Record<ServiceName, number>;
const keys = generateStackKeys();
const envs = serviceEnvs(
  { databaseUrl: "postgres://db/x", logLevel: "warn", env: { REDIS_URL: "redis://r" } },
  ports,
  keys,
);

test("every gRPC service listens on 127.0.0.1 at its port; the gateway on 127.0.0.1 by default", () => {
  for (const s of registry) {
    const env = envs[s.name];
    if (s.kind === "grpc") {
      expect(env.GRPC_ADDR).toBe(`127.0.0.1:${ports[s.name]}`);
      expect(env.HTTP_HOST).toBeUndefined();
    } else {
      expect(env).toMatchObject({ HTTP_HOST: "127.0.0.1", HTTP_PORT: String(ports[s.name]) });
      expect(env.GRPC_ADDR).toBeUndefined();
    }
    expect(env).toMatchObject({ DATABASE_URL: "postgres://db/x", LOG_LEVEL: "warn", REDIS_URL: "redis://r" });
  }
  expect(serviceEnvs({ databaseUrl: "x", gatewayHost: "0.0.0.0" }, ports, keys).gateway.HTTP_HOST).toBe(
    "0.0.0.0",
  );
});

test("a service receives the address of each service that lists it as a caller, and no other", () => {
  for (const s of registry) {
    const given = Object.keys(envs[s.name])
      .filter((k) => k.endsWith("_ADDR") && k !== "GRPC_ADDR")
      .sort();
    const expected = registry.filter((c) => c.callers.includes(s.name)).map((c) => c.addrEnv!);
    expect(given).toEqual(expected.sort());
  }
  expect(envs.gateway).toMatchObject({
    PASSPORT_ADDR: `127.0.0.1:${ports.passport}`,
    EVENTS_ADDR: `127.0.0.1:${ports.events}`,
  });
});

test("npm start's ports: registry defaults, PORT for the gateway, <NAME>_PORT for a gRPC service", () => {
  const defaults = Object.fromEntries(registry.map((s) => [s.name, s.port]));
  expect(portsFromEnv({})).toEqual(defaults);
  expect(portsFromEnv({ PORT: "9090", PASSPORT_PORT: "51051", EVENTS_PORT: "" })).toEqual({
    ...defaults,
    gateway: 9090,
    passport: 51051,
  });
  expect(() => portsFromEnv({ EVENTS_PORT: "eight" })).toThrow(
    'EVENTS_PORT must be a port number (1 to 65535), got "eight"',
  );
  expect(() => portsFromEnv({ PORT: "0" })).toThrow(/PORT must be a port number/);
});

test("each gRPC service trusts exactly its callers' keys; each caller holds its own private key", () => {
  for (const s of registry) {
    const env = envs[s.name];
    const callees = registry.filter((c) => c.callers.includes(s.name));
    if (callees.length > 0) expect(env.INTERNAL_AUTH_PRIVATE_KEY).toBe(keys[s.name]!.privateKey);
    else expect(env.INTERNAL_AUTH_PRIVATE_KEY).toBeUndefined();
    if (s.kind !== "grpc") {
      expect(env.INTERNAL_AUTH_TRUSTED_KEYS).toBeUndefined();
      continue;
    }
    const trusted = env.INTERNAL_AUTH_TRUSTED_KEYS!.split(",").map((e) => e.split(":"));
    const expected = s.callers.map((c) => [c, keys[c]!.publicKey]);
    // The admin CLI's platform operations (passport), attestations (filings), webhook backlogs (webhooks) and
    // the public surface's cache (public-surface).
    if (["passport", "filings", "webhooks", "public-surface"].includes(s.name))
      expected.push(["admin", keys.admin!.publicKey]);
    expect(trusted.sort()).toEqual(expected.sort());
  }
});
