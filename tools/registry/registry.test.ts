/**
 * The registry of services (services.json) against its rules and against the
 * tree: every folder under services/ but the shared kit is registered, every
 * entry has its folder, the names it gives (proto services, <NAME>_ADDR) exist
 * where they must, and what is generated or listed from it is current.
 */
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import {
  addrEnvOf,
  calleesOf,
  folderProblems,
  gatewayEntry,
  loadRegistry,
  parseRegistry,
  portEnvOf,
  REGISTRY_FILE,
  RegistryError,
  REPO_ROOT,
  type ServiceEntry,
} from ".";

const raw = (): any => JSON.parse(fs.readFileSync(REGISTRY_FILE, "utf8"));
const registry = loadRegistry();

/** A valid registry to break in the tests of the rules (independent of today's services.json). */
const fixture = (): any => ({
  $comment: "fixture",
  services: [
    {
      name: "gateway",
      kind: "gateway",
      folder: "services/gateway",
      port: 8080,
      addrEnv: null,
      protoServices: [],
      schema: "gateway",
      gatewayModule: null,
      callers: [],
    },
    {
      name: "passport",
      kind: "grpc",
      folder: "services/passport",
      port: 50051,
      addrEnv: "PASSPORT_ADDR",
      protoServices: ["dpp.passport.v1.PassportService"],
      schema: "passport",
      gatewayModule: "passport",
      callers: ["gateway", "variants-units"],
    },
    {
      name: "variants-units",
      kind: "grpc",
      folder: "services/variants-units",
      port: 50053,
      addrEnv: "VARIANTS_UNITS_ADDR",
      protoServices: ["dpp.variants.v1.VariantsService", "dpp.units.v1.UnitsService"],
      schema: "variants_units",
      gatewayModule: null,
      callers: [],
    },
  ],
});

/** Every file under dir (recursively), node_modules left out. */
function filesUnder(dir: string): string[] {
  if (!fs.existsSync(dir)) return [];
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((d) => {
    if (d.name === "node_modules") return [];
    const p = path.join(dir, d.name);
    return d.isDirectory() ? filesUnder(p) : [p];
  });
}

describe("services.json", () => {
  test("is valid, and names.generated.ts lists its services in its order", () => {
    expect(() => parseRegistry(raw())).not.toThrow();
    expect(registry.map((s) => s.name)).toEqual(raw().services.map((s: { name: string }) => s.name));
    expect(gatewayEntry(registry).kind).toBe("gateway");
  });

  test("every folder under services/ but the shared kit has an entry, and every entry its folder", () => {
    expect(folderProblems(registry)).toEqual([]);
  });

  test("the folder check names a folder without an entry and an entry without a folder", () => {
    const last = registry[registry.length - 1];
    expect(folderProblems(registry.slice(0, -1))).toEqual([
      `${last.folder} has no entry in services.json (docs/adding-a-service.md)`,
    ]);
    const billing: ServiceEntry<string> = { ...last, name: "billing", folder: "services/billing" };
    expect(folderProblems([...registry, billing])).toEqual([
      `service "billing" is registered but services/billing does not exist`,
    ]);
  });

  const malformed: Array<[string, (r: any) => void, RegExp]> = [
    ["an unknown top-level key", (r) => (r.version = 2), /unknown top-level key "version"/],
    ["no services", (r) => (r.services = []), /"services" must be a non-empty array/],
    ["an unknown field", (r) => (r.services[1].replicas = 2), /service "passport": unknown field "replicas"/],
    ["a missing field", (r) => delete r.services[1].schema, /service "passport": missing field "schema"/],
    ["an upper-case name", (r) => (r.services[1].name = "Passport"), /name must be lower-case words/],
    ["the kit registered", (r) => (r.services[1].name = "kit"), /"kit" is a shared library/],
    ["an unknown kind", (r) => (r.services[1].kind = "http"), /kind must be "gateway" or "grpc"/],
    [
      "a folder elsewhere",
      (r) => (r.services[1].folder = "apps/passport"),
      /folder must be "services\/passport"/,
    ],
    ["a port out of range", (r) => (r.services[2].port = 70000), /port must be an integer from 1 to 65535/],
    ["a port as a string", (r) => (r.services[2].port = "50052"), /port must be an integer/],
    ["a wrong addrEnv", (r) => (r.services[1].addrEnv = "PASSPORT_URL"), /addrEnv must be "PASSPORT_ADDR"/],
    ["an addrEnv on the gateway", (r) => (r.services[0].addrEnv = "GATEWAY_ADDR"), /addrEnv must be null/],
    ["a gRPC service serving nothing", (r) => (r.services[1].protoServices = []), /at least one service/],
    [
      "a proto service name that is not fully qualified",
      (r) => (r.services[1].protoServices = ["PassportService"]),
      /"PassportService" is not a fully-qualified service name/,
    ],
    ["a reserved schema", (r) => (r.services[2].schema = "bus"), /schema "bus" is reserved/],
    ["a schema with capitals", (r) => (r.services[2].schema = "Events"), /schema must be null or/],
    [
      "a fronted service the gateway may not call",
      (r) => (r.services[1].callers = []),
      /a service the gateway fronts lists "gateway" among its callers/,
    ],
    [
      "an unknown caller",
      (r) => r.services[1].callers.push("billing"),
      /caller "billing" is not a registered/,
    ],
    ["a service calling itself", (r) => r.services[1].callers.push("passport"), /does not list itself/],
    ["callers of the gateway", (r) => (r.services[0].callers = ["passport"]), /callers must be \[\]/],
    [
      "a gateway module on the gateway",
      (r) => (r.services[0].gatewayModule = "edge"),
      /gatewayModule must be null/,
    ],
    ["a caller listed twice", (r) => r.services[1].callers.push("gateway"), /lists a service twice/],
    [
      "a second gateway",
      (r) =>
        r.services.push({
          ...r.services[0],
          name: "edge",
          folder: "services/edge",
          port: 8081,
          schema: "edge",
        }),
      /exactly one service has kind "gateway"/,
    ],
    [
      "a name twice",
      (r) => r.services.push({ ...r.services[2], port: 50099, schema: "x", protoServices: ["dpp.x.v1.X"] }),
      /service "variants-units" is registered twice/,
    ],
    [
      "a port twice",
      (r) => (r.services[2].port = r.services[1].port),
      /port 50051 is the default of more than one/,
    ],
    [
      "a schema twice",
      (r) => (r.services[2].schema = "passport"),
      /schema "passport" is owned by more than one/,
    ],
    [
      "a proto service twice",
      (r) => (r.services[2].protoServices = r.services[1].protoServices),
      /"dpp.passport.v1.PassportService" is served by more than one service/,
    ],
  ];
  test("the rules accept a valid registry with a service that the gateway does not front", () => {
    expect(parseRegistry(fixture()).map((s) => s.name)).toEqual(["gateway", "passport", "variants-units"]);
    expect(calleesOf(parseRegistry(fixture()), "variants-units").map((s) => s.name)).toEqual(["passport"]);
  });

  test.each(malformed)("rejects %s", (_what, mutate, message) => {
    const r = fixture();
    mutate(r);
    let error: unknown;
    try {
      parseRegistry(r);
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(RegistryError);
    expect((error as RegistryError).problems.join("\n")).toMatch(message);
  });

  test("every proto service it lists is declared in the service's own proto/ folder", () => {
    const declared = new Set<string>();
    const owned = registry.flatMap((s) => filesUnder(path.join(REPO_ROOT, s.folder, "proto")));
    for (const file of owned.filter((f) => f.endsWith(".proto"))) {
      const text = fs.readFileSync(file, "utf8");
      const pkg = /^package\s+([\w.]+);/m.exec(text)?.[1];
      for (const m of text.matchAll(/^service\s+(\w+)\s*\{/gm)) declared.add(`${pkg}.${m[1]}`);
    }
    const listed = registry.flatMap((s) => [...s.protoServices]);
    expect(listed.length).toBeGreaterThan(0);
    expect(listed.filter((p) => !declared.has(p))).toEqual([]);
  });

  test("every caller's source reads the <NAME>_ADDR of the services it may call", () => {
    const missing: string[] = [];
    for (const caller of registry) {
      const callees = calleesOf(registry, caller.name);
      if (callees.length === 0) continue;
      const source = filesUnder(path.join(REPO_ROOT, caller.folder, "src"))
        .filter((f) => f.endsWith(".ts"))
        .map((f) => fs.readFileSync(f, "utf8"))
        .join("\n");
      for (const c of callees)
        if (!source.includes(c.addrEnv!)) missing.push(`${caller.name} → ${c.addrEnv}`);
    }
    expect(missing).toEqual([]);
  });

  test("each service the gateway fronts has its gateway module, in its own folder or the gateway's", () => {
    const modulesDir = path.join(REPO_ROOT, gatewayEntry(registry).folder, "src", "modules");
    const fronted = registry.filter((s) => s.gatewayModule !== null);
    expect(fronted.length).toBeGreaterThan(0);
    const absent = fronted.filter(
      (s) =>
        !fs.existsSync(path.join(REPO_ROOT, s.folder, "gateway", "module.ts")) &&
        !fs.existsSync(path.join(modulesDir, s.gatewayModule!, "module.ts")),
    );
    expect(absent.map((s) => `${s.name}: ${s.folder}/gateway/module.ts`)).toEqual([]);
  });

  test("the variable names derive from the service name", () => {
    expect(addrEnvOf("variants-units")).toBe("VARIANTS_UNITS_ADDR");
    expect(portEnvOf({ name: "variants-units", kind: "grpc" })).toBe("VARIANTS_UNITS_PORT");
    expect(portEnvOf({ name: "gateway", kind: "gateway" })).toBe("PORT");
    expect(calleesOf(parseRegistry(fixture()), "gateway").map((s) => s.addrEnv)).toEqual(["PASSPORT_ADDR"]);
    expect(calleesOf(registry, "gateway").map((s) => s.addrEnv)).toEqual(
      registry.filter((s) => s.callers.includes("gateway")).map((s) => addrEnvOf(s.name)),
    );
  });
});

describe("what the registry drives", () => {
  test("jest has one project per registered service, besides the shared libraries, tools, the Helm chart, the SDK, e2e and the static checks", () => {
    // jest.config.js is CommonJS (jest loads it with require); so does this test.
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const config = require(path.join(REPO_ROOT, "jest.config.js")) as {
      projects: Array<{ displayName: string; rootDir: string }>;
    };
    const projects = config.projects.map((p) => `${p.displayName} ${p.rootDir}`);
    expect(projects).toEqual([
      "contract <rootDir>/services/contract",
      "kit <rootDir>/services/kit",
      "bus <rootDir>/packages/bus",
      ...registry.map((s) => `${s.name} <rootDir>/${s.folder}`),
      "tools <rootDir>/tools",
      "chart <rootDir>/tools/chart",
      "client <rootDir>/packages/client",
      "cli <rootDir>/packages/cli",
      "e2e <rootDir>/test-e2e",
      "checks <rootDir>/tools/checks",
    ]);
  });

  test("deploy/compose.yaml and names.generated.ts are what tools/gen-registry.mjs makes of it", () => {
    expect(() =>
      execFileSync(process.execPath, ["tools/gen-registry.mjs", "--check"], {
        cwd: REPO_ROOT,
        stdio: "pipe",
      }),
    ).not.toThrow();
  });

  test("the image exposes the default port of every registered service", () => {
    const dockerfile = fs.readFileSync(path.join(REPO_ROOT, "deploy", "Dockerfile"), "utf8");
    const exposed = /^EXPOSE\s+(.+)$/m.exec(dockerfile)?.[1].trim().split(/\s+/).map(Number);
    expect(exposed?.sort()).toEqual(registry.map((s) => s.port).sort());
  });
});
