/**
 * Every gateway route that accepts an Idempotency-Key (its `idempotent`, which the OpenAPI document promises as
 * a replay) calls a service whose definition declares `idempotency`: a service that does not refuses every keyed
 * call (configuration_error), and the gateway keeps no record of its own (decision 0018).
 *
 * Which service a route calls is found by running its handler: the gateway's modules are built with a recording
 * stand-in for each dependency (ModuleDeps: the gateway's own store, and one client per service, named as the
 * service is in services.json), and the handler's calls are recorded. Each service's definition is read from its
 * package entry (services/<name>/package.json "main"): the exported definition, or a function without required
 * arguments that returns it (the passport's).
 */
import fs from "node:fs";
import path from "node:path";
import { gatewayEntry, loadRegistry, REPO_ROOT, type ServiceEntry } from ".";

interface Definition {
  name: string;
  migrations: object;
  start: unknown;
  idempotency?: boolean | { openWithWork: boolean };
}

interface Route {
  operationId: string;
  method: string;
  path: string;
  idempotent: boolean;
  bodyLimitBytes?: number;
  conditional?: boolean;
  handler(input: object): Promise<unknown>;
}

const registry = loadRegistry();

/** A package's entry, loaded as the packages that depend on it load it. */
const entryOf = (entry: ServiceEntry): Record<string, unknown> =>
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- a registry-derived list of packages
  require(path.join(REPO_ROOT, entry.folder)) as Record<string, unknown>;

const isDefinition = (v: unknown, name: string): v is Definition =>
  typeof v === "object" && v !== null && (v as Definition).name === name && "migrations" in v && "start" in v;

/** The service's definition, from its package entry. */
function definitionOf(entry: ServiceEntry): Definition {
  for (const value of Object.values(entryOf(entry))) {
    const def = typeof value === "function" && value.length === 0 ? (value as () => unknown)() : value;
    if (isDefinition(def, entry.name)) return def;
  }
  throw new Error(`${entry.folder}'s package entry exports no definition named "${entry.name}"`);
}

/** A call a route's handler made: the dependency (ModuleDeps) and its method, and whether it carried a key. */
interface Recorded {
  dependency: string;
  method: string;
  keyed: boolean;
}

/** Builds the gateway's modules with recording stand-ins for every dependency. */
function recordingRoutes(): { routes: Route[]; calls: Recorded[] } {
  const gateway = entryOf(gatewayEntry(registry));
  const gatewayModules = gateway.gatewayModules as (deps: object) => Array<{ routes: Route[] }>;
  const calls: Recorded[] = [];
  const standIn = (dependency: string) =>
    new Proxy(
      {},
      {
        get: (_t, method) => {
          if (typeof method !== "string" || method === "then") return undefined;
          return (_req: unknown, opts?: { context?: { idempotency?: unknown } }) => {
            calls.push({ dependency, method, keyed: opts?.context?.idempotency !== undefined });
            return Promise.reject(new Error("a recording stand-in answers nothing"));
          };
        },
      },
    );
  const deps = new Proxy({}, { get: (_t, name) => standIn(String(name)) });
  return { routes: gatewayModules(deps).flatMap((m) => m.routes), calls };
}

/** A keyed request of the route, as the middleware hands it to the handler. */
/**
 * The body each service's gateway/authz.json gives an operation (a body its route accepts, such as an import's
 * one row), by operationId; other routes get `{}`.
 */
const AUTHZ_BODIES: Record<string, unknown> = Object.assign(
  {},
  ...registry.map((s) => {
    const file = path.join(REPO_ROOT, s.folder, "gateway", "authz.json");
    if (!fs.existsSync(file)) return {};
    const given = JSON.parse(fs.readFileSync(file, "utf8")) as Record<string, { body?: unknown }>;
    return Object.fromEntries(
      Object.entries(given)
        .filter(([, g]) => g.body !== undefined)
        .map(([op, g]) => [op, g.body]),
    );
  }),
);

/** The bodies of test-e2e/authz-matrix.json's rows (the gateway's own routes), by operation. */
const MATRIX_BODIES: Record<string, unknown> = Object.fromEntries(
  (
    JSON.parse(fs.readFileSync(path.join(REPO_ROOT, "test-e2e", "authz-matrix.json"), "utf8")) as {
      routes: Array<{ operation: string; body?: unknown }>;
    }
  ).routes
    .filter((r) => r.body !== undefined)
    .map((r) => [r.operation, r.body]),
);

/** Well-formed bodies of the variants and units routes, whose authorization rows send none. */
const WELL_FORMED: Record<string, unknown> = {
  createVariants: { variants: [{ gtin: "4006381333931", size: "M" }] },
  removeVariants: { gtins: ["4006381333931"] },
  createUnits: { units: [{ unit_serial: "SN-1" }] },
  changeUnitStatus: { status: "original" },
};

function keyedInput(route: Route): object {
  const params = Object.fromEntries(
    [...route.path.matchAll(/\{(\w+)\}/g)].map(([, name]) => [name, `${name}_1`]),
  );
  return {
    params,
    query: {},
    body:
      route.bodyLimitBytes !== undefined
        ? (AUTHZ_BODIES[route.operationId] ??
          MATRIX_BODIES[route.operationId] ??
          WELL_FORMED[route.operationId] ??
          {})
        : undefined,
    conditional: route.conditional ? {} : undefined,
    ctx: {
      requestId: "req_keyed_routes",
      organizationId: params.organization ?? "org_1",
      livemode: false,
      idempotency: { key: "k-1", fingerprint: "0".repeat(64), callerOrganizationId: "org_1" },
    },
  };
}

describe("routes that accept an Idempotency-Key", () => {
  const { routes } = recordingRoutes();
  const keyedRoutes = routes.filter((r) => r.idempotent);

  it("exist (the check below has something to check)", () => {
    expect(keyedRoutes.length).toBeGreaterThan(0);
  });

  it.each(keyedRoutes.map((r) => [r.operationId, r] as const))(
    "%s calls only services that declare idempotency, with the key",
    async (_id, route) => {
      const { routes: fresh, calls } = recordingRoutes();
      const handler = fresh.find((r) => r.operationId === route.operationId)!.handler;
      await handler(keyedInput(route)).catch(() => undefined);
      expect(calls.length).toBeGreaterThan(0);
      for (const call of calls) {
        // The gateway's dependencies are named in camelCase (variants-units: variantsUnits).
        const camel = (name: string) => name.replace(/-(\w)/g, (_m, c: string) => c.toUpperCase());
        const entry = registry.find((s) => camel(s.name) === call.dependency && s.kind === "grpc");
        // The gateway's own store (identity) keeps no idempotency record: such a route cannot replay.
        expect([route.operationId, call.dependency, entry?.kind ?? "not a registered gRPC service"]).toEqual([
          route.operationId,
          call.dependency,
          "grpc",
        ]);
        const def = definitionOf(entry!);
        expect([route.operationId, def.name, Boolean(def.idempotency)]).toEqual([
          route.operationId,
          def.name,
          true,
        ]);
        expect([route.operationId, call.method, call.keyed]).toEqual([route.operationId, call.method, true]);
      }
    },
  );
});
