/**
 * The OpenAPI document (services/gateway/openapi/openapi.yaml) and the route table
 * describe the same interface: no route is missing from either side, and scopes,
 * Idempotency-Key, bodies and success statuses agree. The error codes and their
 * statuses agree with the kit's ERROR_TABLE. See docs/decisions/0008-openapi-contract.md.
 */
import fs from "node:fs";
import path from "node:path";
import type { AddressInfo } from "node:net";
import { parse } from "yaml";
import { ERROR_TABLE } from "@dpp/contract";
import { createLogger } from "@dpp/kit";
import { createApp } from "./http/app";
import { OPENAPI_DOCUMENT } from "./openapi.generated";
import { routeTable, ROUTES, type RouteSpec } from "./routes";
import type { Authenticator } from "./modules/identity/authenticator";

const SOURCE = path.join(__dirname, "..", "openapi", "openapi.yaml");
const doc = parse(fs.readFileSync(SOURCE, "utf8"));

const METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"] as const;

interface Operation {
  operationId?: string;
  security?: Record<string, string[]>[];
  parameters?: any[];
  requestBody?: unknown;
  responses: Record<string, any>;
  "x-body-limit-bytes"?: number;
}

interface DocOperation {
  method: string;
  path: string;
  op: Operation;
  /** Path-level parameters followed by the operation's own, $refs resolved. */
  parameters: any[];
}

/** Resolves a local "#/..." $ref (once; the document's refs are local). */
function deref<T = any>(node: any): T {
  if (!node || typeof node.$ref !== "string") return node;
  const target = node.$ref
    .replace(/^#\//, "")
    .split("/")
    .map((t: string) => t.replace(/~1/g, "/").replace(/~0/g, "~"))
    .reduce((at: any, key: string) => at?.[key], doc);
  if (target === undefined) throw new Error(`unresolved $ref ${node.$ref}`);
  return deref(target);
}

const operations: DocOperation[] = Object.entries(doc.paths as Record<string, any>).flatMap(([p, item]) =>
  METHODS.filter((m) => item[m]).map((m) => ({
    method: m.toUpperCase(),
    path: p,
    op: item[m] as Operation,
    parameters: [...(item.parameters ?? []), ...(item[m].parameters ?? [])].map(deref),
  })),
);

const key = (method: string, p: string) => `${method} ${p}`;

/** The security requirement an operation must declare for the route's auth mode and scope. */
function expectedSecurity(r: RouteSpec): Record<string, string[]>[] {
  switch (r.auth) {
    case "none":
      return [];
    case "optional":
      return [{}, { bearerAuth: [] }];
    default:
      return [{ bearerAuth: r.scope ? [r.scope] : [] }];
  }
}

describe("the OpenAPI document and the route table", () => {
  it("documents every route with its method, path and operationId", () => {
    const documented = new Map(operations.map((o) => [key(o.method, o.path), o.op.operationId]));
    const missing = ROUTES.filter((r) => documented.get(key(r.method, r.path)) !== r.operationId).map(
      (r) => `${key(r.method, r.path)} (${r.operationId})`,
    );
    expect(missing).toEqual([]);
  });

  it("has a route for every documented operation", () => {
    const routed = new Map(ROUTES.map((r) => [key(r.method, r.path), r.operationId]));
    const extra = operations
      .filter((o) => routed.get(key(o.method, o.path)) !== o.op.operationId)
      .map((o) => `${key(o.method, o.path)} (${o.op.operationId})`);
    expect(extra).toEqual([]);
  });

  it("declares on each operation the security and scope its route checks", () => {
    for (const r of ROUTES) {
      const o = operations.find((x) => x.op.operationId === r.operationId);
      if (!o) continue; // reported by the first test
      expect([r.operationId, o.op.security]).toEqual([r.operationId, expectedSecurity(r)]);
    }
  });

  it("lists the Idempotency-Key header exactly on the routes that accept one", () => {
    for (const o of operations) {
      const r = ROUTES.find((x) => x.operationId === o.op.operationId);
      if (!r) continue;
      const has = o.parameters.some((p) => p.in === "header" && p.name.toLowerCase() === "idempotency-key");
      expect([r.operationId, has]).toEqual([r.operationId, r.idempotent]);
    }
  });

  it("has a request body, with the route's ceiling, exactly where the route takes one", () => {
    for (const o of operations) {
      const r = ROUTES.find((x) => x.operationId === o.op.operationId);
      if (!r) continue;
      expect([r.operationId, o.op.requestBody !== undefined]).toEqual([
        r.operationId,
        r.bodyLimitBytes !== undefined,
      ]);
      expect([r.operationId, o.op["x-body-limit-bytes"]]).toEqual([r.operationId, r.bodyLimitBytes]);
      if (o.op.requestBody)
        expect([r.operationId, Object.keys(deref(o.op.requestBody).content)]).toEqual([
          r.operationId,
          ["application/json"],
        ]);
    }
  });

  it("documents each route's success status and a Request-Id header on every response", () => {
    for (const o of operations) {
      const r = ROUTES.find((x) => x.operationId === o.op.operationId);
      if (r)
        expect([r.operationId, String(r.successStatus) in o.op.responses]).toEqual([r.operationId, true]);
      for (const [status, raw] of Object.entries(o.op.responses)) {
        const res = deref(raw);
        const where = `${o.op.operationId} ${status}`;
        expect([where, res.headers?.["Request-Id"] !== undefined]).toEqual([where, true]);
        if (Number(status) >= 400) {
          // Every error response is an error envelope restricted to the codes of its status.
          const schema = res.content?.["application/json"]?.schema;
          expect([where, schema?.$ref]).toEqual([where, `#/components/schemas/ErrorEnvelope${status}`]);
        }
      }
    }
  });

  it("declares every path parameter of each path", () => {
    for (const o of operations) {
      const names = [...o.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]).sort();
      const declared = o.parameters
        .filter((p) => p.in === "path")
        .map((p) => p.name)
        .sort();
      expect([o.op.operationId, declared]).toEqual([o.op.operationId, names]);
    }
  });
});

describe("the OpenAPI error model and the kit's ERROR_TABLE", () => {
  const codeSchema = doc.components.schemas.ErrorCode;
  const table = ERROR_TABLE as Record<string, { status: number }>;

  it("enumerates exactly the codes of ERROR_TABLE", () => {
    expect([...codeSchema.enum].sort()).toEqual(Object.keys(table).sort());
  });

  it("documents each code with the status of ERROR_TABLE", () => {
    const documented: Record<string, number> = codeSchema["x-http-status"];
    const wrong = Object.entries(table)
      .filter(([code, { status }]) => documented[code] !== status)
      .map(([code, { status }]) => `${code}: table ${status}, document ${documented[code]}`);
    expect(wrong).toEqual([]);
    expect(Object.keys(documented).sort()).toEqual(Object.keys(table).sort());
  });

  it("lists each code in the error envelope of its status, and only there", () => {
    const perStatus = Object.entries(doc.components.schemas as Record<string, any>)
      .filter(([name]) => /^ErrorEnvelope\d{3}$/.test(name))
      .map(
        ([name, s]) => [Number(name.slice(-3)), s.allOf[1].properties.error.properties.code.enum] as const,
      );
    const listed = perStatus.flatMap(([status, codes]) => codes.map((c: string) => `${c} ${status}`)).sort();
    expect(listed).toEqual(
      Object.entries(table)
        .map(([c, { status }]) => `${c} ${status}`)
        .sort(),
    );
  });

  it("has a row for each code, with its status, in the introduction's table", () => {
    const rows = new Map(
      [...(doc.info.description as string).matchAll(/^\| `(\w+)` \| (\d{3}) \|/gm)].map((m) => [
        m[1],
        Number(m[2]),
      ]),
    );
    expect(Object.fromEntries(rows)).toEqual(
      Object.fromEntries(Object.entries(table).map(([c, e]) => [c, e.status])),
    );
  });
});

describe("the generated module and the served document", () => {
  it("is the YAML source as it is today (else run `npm run -s gen:openapi`)", () => {
    expect(OPENAPI_DOCUMENT).toEqual(doc);
  });

  it("serves /v1/openapi.json and /docs without a credential, with a Request-Id", async () => {
    const refuse = () => {
      throw new Error("no credential may be looked at");
    };
    const app = createApp({
      authenticator: { authenticate: refuse, resolveOrganization: refuse } as unknown as Authenticator,
      // The gateway's own routes only: no module, so no store or client.
      routes: routeTable([]),
      log: createLogger("gateway-test", "silent"),
      docsBaseUrl: "https://docs.test/errors",
      trustProxy: 0,
      ready: async () => undefined,
    });
    const server = app.listen(0, "127.0.0.1");
    await new Promise((r) => server.once("listening", r));
    try {
      const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const json = await fetch(`${base}/v1/openapi.json`);
      expect(json.status).toBe(200);
      expect(json.headers.get("content-type")).toMatch(/^application\/json/);
      expect(json.headers.get("request-id")).toMatch(/^req_[0-9a-f]{24}$/);
      expect(await json.json()).toEqual(doc);

      const page = await fetch(`${base}/docs`);
      expect(page.status).toBe(200);
      expect(page.headers.get("content-type")).toMatch(/^text\/html/);
      expect(page.headers.get("request-id")).toMatch(/^req_[0-9a-f]{24}$/);
      const html = await page.text();
      expect(html).toContain("createPassport");
      // Self-contained: no script or stylesheet is loaded from elsewhere.
      expect(html).not.toMatch(/<script[^>]+src=["']?https?:/i);
      expect(html).not.toMatch(/<link[^>]+rel=["']?stylesheet[^>]+href=["']?https?:/i);
    } finally {
      await new Promise((r) => server.close(r));
    }
  });
});
