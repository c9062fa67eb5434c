import { ConfigError } from "@dpp/kit";
import { loadServiceConfig } from "@dpp/kit/internal";
import { eventsService } from "./service";

const loadEventsConfig = (env: Record<string, string | undefined>) => loadServiceConfig(eventsService, env);

describe("loadEventsConfig", () => {
  it("applies defaults", () => {
    const c = loadEventsConfig({ DATABASE_URL: "postgres://u@h:5432/db" });
    expect(c).toMatchObject({
      DATABASE_URL: "postgres://u@h:5432/db",
      GRPC_ADDR: "0.0.0.0:50052",
      LOG_LEVEL: "info",
    });
    expect(c.BUS_DATABASE_URL).toBeUndefined();
  });

  it("reads the optional bus database", () => {
    const c = loadEventsConfig({
      DATABASE_URL: "postgres://u@h/db",
      BUS_DATABASE_URL: "postgresql://u@b/bus",
    });
    expect(c.BUS_DATABASE_URL).toBe("postgresql://u@b/bus");
  });

  it("names every offending variable", () => {
    expect(() => loadEventsConfig({ GRPC_ADDR: "nope", BUS_DATABASE_URL: "mysql://x" })).toThrow(ConfigError);
    try {
      loadEventsConfig({ GRPC_ADDR: "nope", BUS_DATABASE_URL: "mysql://x" });
    } catch (e) {
      expect((e as Error).message).toMatch(/DATABASE_URL/);
      expect((e as Error).message).toMatch(/GRPC_ADDR/);
      expect((e as Error).message).toMatch(/BUS_DATABASE_URL/);
    }
  });

  it("reads the feed retention and the Kafka settings", () => {
    const c = loadEventsConfig({
      DATABASE_URL: "postgres://u@h/db",
      FEED_RETENTION_DAYS: "30",
      KAFKA_BROKERS: "k1:9092,k2:9092",
      KAFKA_SSL: "true",
      KAFKA_SASL_MECHANISM: "scram-sha-256",
      KAFKA_SASL_USERNAME: "events",
      KAFKA_SASL_PASSWORD: "pw",
    });
    expect(c).toMatchObject({
      FEED_RETENTION_DAYS: 30,
      KAFKA_BROKERS: ["k1:9092", "k2:9092"],
      KAFKA_SSL: true,
      KAFKA_TOPIC_PARTITIONS: 6,
      KAFKA_SASL_MECHANISM: "scram-sha-256",
    });
    const d = loadEventsConfig({ DATABASE_URL: "postgres://u@h/db" });
    expect(d.FEED_RETENTION_DAYS).toBe(90);
    expect(d.KAFKA_BROKERS).toBeUndefined();
  });

  it("refuses SASL without credentials and a negative retention", () => {
    expect(() =>
      loadEventsConfig({
        DATABASE_URL: "postgres://u@h/db",
        KAFKA_BROKERS: "k:1",
        KAFKA_SASL_MECHANISM: "plain",
      }),
    ).toThrow(/KAFKA_SASL_USERNAME[\s\S]*KAFKA_SASL_PASSWORD/);
    expect(() => loadEventsConfig({ DATABASE_URL: "postgres://u@h/db", FEED_RETENTION_DAYS: "-1" })).toThrow(
      /FEED_RETENTION_DAYS/,
    );
  });
});
