import { z } from "zod";
import { ConfigError, address, listenAddress, loadConfig } from "./config";
import { commonServiceEnv as serviceEnv } from "./service";

const schema = z.object({ ...serviceEnv, GRPC_ADDR: listenAddress });

describe("loadConfig", () => {
  it("returns a frozen, typed config with defaults applied", () => {
    const config = loadConfig(schema, {
      DATABASE_URL: "postgres://u@127.0.0.1:5432/db",
      GRPC_ADDR: "127.0.0.1:7001",
      UNRELATED: "ignored",
    });
    expect(config).toEqual({
      DATABASE_URL: "postgres://u@127.0.0.1:5432/db",
      GRPC_ADDR: "127.0.0.1:7001",
      LOG_LEVEL: "info",
      DB_POOL_MAX: 10,
      DB_POOL_IDLE_MS: 30000,
      DB_PREPARED_STATEMENTS: 200,
      RELAY_INTERVAL_MS: 500,
      RELAY_DEBOUNCE_MS: 10,
      SHUTDOWN_GRACE_MS: 10000,
      SHUTDOWN_DRAIN_DELAY_MS: 0,
      GRPC_DNS_MIN_INTERVAL_MS: 5000,
      GRPC_RETRY_MAX_ATTEMPTS: 3,
      GRPC_RETRY_BACKOFF_MS: 25,
      IDEMPOTENCY_REAP_INTERVAL_MS: 600000,
      BUS_PRUNE_INTERVAL_MS: 3600000,
      KAFKA_SSL: false,
      KAFKA_TOPIC: "dpp.domain-events.v1",
      KAFKA_CONSUMER_GROUP: "events",
      KAFKA_TOPIC_PARTITIONS: 6,
      KAFKA_TOPIC_CREATE: true,
      KAFKA_SESSION_TIMEOUT_MS: 10000,
      KAFKA_REBALANCE_TIMEOUT_MS: 30000,
      METRICS_PORT: 9464,
      METRICS_HOST: "0.0.0.0",
    });
    expect(Object.isFrozen(config)).toBe(true);
    expect(() => {
      (config as { DB_POOL_MAX: number }).DB_POOL_MAX = 1;
    }).toThrow(TypeError);
  });

  it("reads METRICS_PORT as a port, 0 for a free one, or off; anything else names the variable", () => {
    const base = { DATABASE_URL: "postgresql://x/y", GRPC_ADDR: "0.0.0.0:0" };
    expect(loadConfig(schema, { ...base, METRICS_PORT: "9500" }).METRICS_PORT).toBe(9500);
    expect(loadConfig(schema, { ...base, METRICS_PORT: "0" }).METRICS_PORT).toBe(0);
    expect(loadConfig(schema, { ...base, METRICS_PORT: "off" }).METRICS_PORT).toBe("off");
    expect(() => loadConfig(schema, { ...base, METRICS_PORT: "70000" })).toThrow(/METRICS_PORT/);
    expect(() => loadConfig(schema, { ...base, METRICS_PORT: "none" })).toThrow(/METRICS_PORT/);
  });

  it("coerces numbers from the environment's strings", () => {
    const config = loadConfig(schema, {
      DATABASE_URL: "postgresql://x/y",
      GRPC_ADDR: "0.0.0.0:0",
      DB_POOL_MAX: "3",
      LOG_LEVEL: "debug",
    });
    expect(config.DB_POOL_MAX).toBe(3);
    expect(typeof config.DB_POOL_MAX).toBe("number");
    expect(config.LOG_LEVEL).toBe("debug");
  });

  it("names every missing or malformed variable in one ConfigError", () => {
    let caught: unknown;
    try {
      loadConfig(schema, { GRPC_ADDR: "nonsense", DB_POOL_MAX: "many", LOG_LEVEL: "loud" });
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(ConfigError);
    const message = (caught as ConfigError).message;
    expect((caught as ConfigError).name).toBe("ConfigError");
    for (const name of ["DATABASE_URL", "GRPC_ADDR", "DB_POOL_MAX", "LOG_LEVEL"])
      expect(message).toContain(name);
    expect(message).not.toContain("RELAY_INTERVAL_MS");
  });

  it.each([
    ["DB_POOL_MAX", "0"],
    ["DB_POOL_MAX", "2.5"],
    ["SHUTDOWN_GRACE_MS", "-1"],
    ["DATABASE_URL", "mysql://root@localhost/db"],
    ["GRPC_ADDR", "localhost"],
    // A server listens on one address: a list of targets is for callers.
    ["GRPC_ADDR", "ipv4:127.0.0.1:1,127.0.0.1:2"],
    ["GRPC_ADDR", "dns:///passport:50051"],
  ])("refuses %s=%j", (name, value) => {
    const env: Record<string, string> = {
      DATABASE_URL: "postgres://u@h/db",
      GRPC_ADDR: "127.0.0.1:1",
      [name]: value,
    };
    expect(() => loadConfig(schema, env)).toThrow(ConfigError);
    expect(() => loadConfig(schema, env)).toThrow(name);
  });

  it("does not echo a malformed value (it may hold a password)", () => {
    expect(() =>
      loadConfig(schema, { DATABASE_URL: "mysql://admin:hunter2@db/x", GRPC_ADDR: "127.0.0.1:1" }),
    ).toThrow(expect.objectContaining({ message: expect.not.stringContaining("hunter2") }));
  });
});

describe("a service's address (<NAME>_ADDR)", () => {
  const addr = z.object({ PASSPORT_ADDR: address });
  it.each([
    "127.0.0.1:50051",
    "passport:50051",
    "dpp-passport-headless.dpp.svc.cluster.local:50051",
    "dns:///dpp-passport-headless:50051",
    "dns://10.96.0.10:53/passport:50051",
    "ipv4:127.0.0.1:50051",
    "ipv4:127.0.0.1:50051,127.0.0.1:50061,127.0.0.1:50071",
    "ipv6:[::1]:50051,[::1]:50061",
  ])("takes %j", (value) => {
    expect(loadConfig(addr, { PASSPORT_ADDR: value }).PASSPORT_ADDR).toBe(value);
  });

  it.each([
    "passport",
    "passport:",
    "http://passport:50051",
    "dns:///passport",
    "ipv4:127.0.0.1",
    "ipv4:127.0.0.1:50051,",
    "ipv4:passport:50051",
    "127.0.0.1:50051,127.0.0.1:50061",
    "passport :50051",
  ])("refuses %j, naming the variable and the forms it takes", (value) => {
    expect(() => loadConfig(addr, { PASSPORT_ADDR: value })).toThrow(
      /PASSPORT_ADDR: expected host:port, dns:\/\/\/host:port, or ipv4:/,
    );
  });
});
