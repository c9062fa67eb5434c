/** The route table is the single source of routing, scopes, 405 answers and body limits: keep it consistent. */
import { SCOPES } from "./modules/identity/keys";
import { fakeModuleDeps, gatewayModules } from "./modules";
import { ApiError } from "@dpp/contract";
import { forMethod, PathRouter } from "./http/route";
import { allowedMethods, routeTable, ROUTES } from "./routes";

// The modules are only enumerated here; no handler is called, so no store or client is needed.
const modules = gatewayModules(fakeModuleDeps());

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

  it("uses successStatus 201 for creates only (202 for a create the spec answers as accepted)", () => {
    // POST .../imports queues a job: the spec answers 202 Accepted.
    const accepted = ["createImport"];
    // A POST that records a new resource under another name than create: a unit's reading.
    const created = (id: string) => id.startsWith("create") || id === "recordUnitReading";
    for (const r of ROUTES)
      expect([r.operationId, r.successStatus]).toEqual([
        r.operationId,
        accepted.includes(r.operationId) ? 202 : created(r.operationId) ? 201 : 200,
      ]);
  });
});

describe("route helpers", () => {
  it("finds every path of the table, with its parameters", () => {
    const router = new PathRouter(
      ROUTES.map((r) => ({ path: r.path, method: r.method, target: r.operationId })),
    );
    for (const r of ROUTES) {
      const names = [...r.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);
      const concrete = r.path.replace(/\{(\w+)\}/g, (_m, name: string) => `v_${name}`);
      const found = router.match(concrete);
      expect([r.operationId, found && forMethod(found.target, r.method)]).toEqual([
        r.operationId,
        r.operationId,
      ]);
      expect(found!.target.path).toBe(r.path);
      expect(found!.params).toEqual(Object.fromEntries(names.map((n) => [n, `v_${n}`])));
      expect(found!.target.allowList).toEqual(allowedMethods(ROUTES, r.path));
    }
  });

  it("answers HEAD with the GET route, and nothing else for a method the path does not have", () => {
    const router = new PathRouter([
      { path: "/things", method: "GET", target: "list" },
      { path: "/things", method: "POST", target: "create" },
    ]);
    const { target } = router.match("/things")!;
    expect([forMethod(target, "HEAD"), forMethod(target, "GET"), forMethod(target, "PUT")]).toEqual([
      "list",
      "list",
      undefined,
    ]);
    expect(target.allow).toBe("GET, HEAD, POST");
  });

  it("lets the earlier path of the table answer when two match, whichever method is asked", () => {
    const router = new PathRouter([
      { path: "/things/{id}", method: "GET", target: "get" },
      { path: "/things/special", method: "POST", target: "special" },
      { path: "/things/{id}/parts", method: "GET", target: "parts" },
      { path: "/things/special/parts", method: "GET", target: "special parts" },
    ]);
    expect(router.match("/things/special")).toMatchObject({
      target: { path: "/things/{id}" },
      params: { id: "special" },
    });
    expect(router.match("/things/special/parts")!.target.path).toBe("/things/{id}/parts");
    const later = new PathRouter([
      { path: "/things/special", method: "POST", target: "special" },
      { path: "/things/{id}", method: "GET", target: "get" },
    ]);
    expect(later.match("/things/special")!.target.path).toBe("/things/special");
    expect(later.match("/things/other")!.target.path).toBe("/things/{id}");
  });

  it("matches as the table's paths always did: case, slashes, empty segments, decoding", () => {
    const router = new PathRouter([{ path: "/a/{id}/b", method: "GET", target: "x" }]);
    expect(router.match("/a/1/b/")!.params).toEqual({ id: "1" });
    for (const path of ["/a/1/b//", "/A/1/b", "/a/1/B", "/a//b", "/a/1", "a/1/b", "/a/1/b/c", "", "/"])
      expect([path, router.match(path)]).toEqual([path, undefined]);
    expect(router.match("/a/x%2Fy%20%E2%82%AC+/b")!.params).toEqual({ id: "x/y €+" });
    for (const bad of ["%FF", "%", "%E2%82", "%ED%A0%80"]) {
      let err: unknown;
      try {
        router.match(`/a/${bad}/b`);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(ApiError);
      expect((err as ApiError).code).toBe("invalid_request");
    }
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
