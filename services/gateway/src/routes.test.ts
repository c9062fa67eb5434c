/** The route table is the single source of routing, scopes, 405 answers and body limits: keep it consistent. */
import { SCOPES } from "./modules/identity/keys";
import { gatewayModules, type ModuleDeps } from "./modules";
import { allowedMethods, expressPath, routeTable, ROUTES } from "./routes";

// The modules are only enumerated here; no handler is called, so no store or client is needed.
const modules = gatewayModules({} as ModuleDeps);

describe("ROUTES", () => {
  it("is the gateway's own routes followed by every module's, each with its handler", () => {
    const served = routeTable(modules);
    expect(served.map((r) => r.operationId)).toEqual(ROUTES.map((r) => r.operationId));
    expect(served[0]!.operationId).toBe("getOpenApiDocument");
    expect(served.slice(1)).toEqual(modules.flatMap((m) => m.routes));
    for (const r of served) expect([r.operationId, typeof r.handler]).toEqual([r.operationId, "function"]);
  });

  it("describes the routes without their handlers", () => {
    for (const r of ROUTES) expect([r.operationId, "handler" in r]).toEqual([r.operationId, false]);
  });

  it("gives each module a distinct name and at least one route", () => {
    const names = modules.map((m) => m.name);
    expect(new Set(names).size).toBe(names.length);
    for (const m of modules) expect([m.name, m.routes.length > 0]).toEqual([m.name, true]);
  });

  it("has unique operationIds and one route per method and path", () => {
    const ids = ROUTES.map((r) => r.operationId);
    expect(new Set(ids).size).toBe(ids.length);
    const keys = ROUTES.map((r) => `${r.method} ${r.path}`);
    expect(new Set(keys).size).toBe(keys.length);
  });

  it("gives every organization route a known scope and an {organization} path segment", () => {
    for (const r of ROUTES) {
      const inPath = r.path.startsWith("/organizations/{organization}");
      if (r.auth === "organization" || r.auth === "grantor") {
        expect([r.operationId, r.scope && (SCOPES as readonly string[]).includes(r.scope)]).toEqual([
          r.operationId,
          true,
        ]);
        expect([r.operationId, inPath]).toEqual([r.operationId, true]);
      } else {
        // A scope on a route that does not resolve an organization would never be checked.
        expect([r.operationId, r.scope]).toEqual([r.operationId, undefined]);
        expect([r.operationId, inPath]).toEqual([r.operationId, false]);
      }
    }
  });

  it("uses a write scope for writes and a read scope for reads", () => {
    for (const r of ROUTES.filter((x) => x.scope)) {
      const action = r.scope!.split(":")[1];
      // keys:admin (the grant routes) is neither: it guards administration of access.
      if (action === "admin") continue;
      expect([r.operationId, action]).toEqual([r.operationId, r.method === "GET" ? "read" : "write"]);
    }
  });

  it("gives POST and PATCH routes a body limit, and GET and DELETE routes none", () => {
    for (const r of ROUTES) {
      if (r.method === "POST" || r.method === "PATCH")
        expect([r.operationId, (r.bodyLimitBytes ?? 0) > 0]).toEqual([r.operationId, true]);
      else expect([r.operationId, r.bodyLimitBytes]).toEqual([r.operationId, undefined]);
    }
  });

  it("marks only writes as accepting an Idempotency-Key", () => {
    for (const r of ROUTES.filter((x) => x.idempotent))
      expect([r.operationId, r.method]).not.toEqual([r.operationId, "GET"]);
  });

  it("uses successStatus 201 for creates only", () => {
    for (const r of ROUTES)
      expect([r.operationId, r.successStatus]).toEqual([
        r.operationId,
        r.operationId.startsWith("create") ? 201 : 200,
      ]);
  });
});

describe("route helpers", () => {
  it("turns OpenAPI path parameters into express ones", () => {
    expect(expressPath("/organizations/{organization}/passports/{id}")).toBe(
      "/organizations/:organization/passports/:id",
    );
    expect(expressPath("/categories")).toBe("/categories");
  });

  it("derives Allow from the table, with HEAD alongside GET", () => {
    for (const path of new Set(ROUTES.map((r) => r.path))) {
      const methods = ROUTES.filter((r) => r.path === path).map((r) => r.method as string);
      const expected = new Set(methods);
      if (expected.has("GET")) expected.add("HEAD");
      expect(allowedMethods(ROUTES, path)).toEqual([...expected].sort());
    }
    expect(allowedMethods(ROUTES, "/nowhere")).toEqual([]);
  });
});
