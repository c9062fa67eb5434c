import { ConfigError } from "@dpp/kit";
import { loadEventsConfig } from "./config";

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
});
