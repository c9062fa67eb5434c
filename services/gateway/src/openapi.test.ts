/**
 * The OpenAPI document as served (services/gateway/openapi/openapi.yaml bundled with each service's
 * services/<name>/openapi.yaml by tools/gen-openapi.mjs: src/openapi.generated.ts) and the route table
 * describe the same interface: no route is missing from either side, and scopes,
 * Idempotency-Key, bodies and success statuses agree. The error codes and their
 * statuses agree with the kit's ERROR_TABLE. See docs/decisions/0008-openapi-contract.md.
 */
import { execFileSync } from "node:child_process";
import path from "node:path";
import type { AddressInfo } from "node:net";
import { ERROR_TABLE } from "@dpp/contract";
import { createLogger } from "@dpp/kit";
import { createApp } from "./http/app";
import { OPENAPI_DOCUMENT } from "./openapi.generated";
import { routeTable, ROUTES, type RouteSpec } from "./routes";
import type { Authenticator } from "./modules/identity/authenticator";

const doc = OPENAPI_DOCUMENT as any;

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
    case "authority":
      return [{ authorityToken: [] }];
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
      if (r) {
        expect([r.operationId, String(r.successStatus) in o.op.responses]).toEqual([r.operationId, true]);
        // Exactly the route's success statuses are documented (alsoSuccessStatuses: e.g. 200 beside a 201).
        // A 202 is a success only for a route that answers 202 (an accepted job); elsewhere it is the
        // human_approval_required answer of a connector's publish.
        const documented = Object.keys(o.op.responses).filter(
          (s) => s.startsWith("2") && (s !== "202" || r.successStatus === 202),
        );
        expect([r.operationId, documented.map(Number).sort()]).toEqual([
          r.operationId,
          [r.successStatus, ...(r.alsoSuccessStatuses ?? [])].sort(),
        ]);
      }
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

  it("lists Expected-Version and If-Match exactly on the routes that take the conditional headers", () => {
    for (const o of operations) {
      const r = ROUTES.find((x) => x.operationId === o.op.operationId);
      if (!r) continue;
      const headers = o.parameters
        .filter((p) => p.in === "header")
        .map((p) => p.name)
        .sort();
      const expected = [
        ...(r.conditional ? ["Expected-Version", "If-Match"] : []),
        ...(r.idempotent ? ["Idempotency-Key"] : []),
      ].sort();
      expect([r.operationId, headers]).toEqual([r.operationId, expected]);
    }
  });

  it("says what every object holds: none is an object without properties (a generated `Record<string, never>`)", () => {
    const bare: string[] = [];
    const walk = (node: unknown, at: string): void => {
      if (Array.isArray(node)) return node.forEach((n, i) => walk(n, `${at}/${i}`));
      if (!node || typeof node !== "object") return;
      const s = node as Record<string, unknown>;
      const types = Array.isArray(s.type) ? s.type : [s.type];
      const says = [
        "properties",
        "additionalProperties",
        "patternProperties",
        "allOf",
        "oneOf",
        "anyOf",
        "$ref",
      ];
      if (types.includes("object") && !says.some((k) => k in s) && s.maxProperties !== 0) bare.push(at);
      for (const [k, v] of Object.entries(s)) if (!k.startsWith("x-")) walk(v, `${at}/${k}`);
    };
    walk(doc.paths, "#/paths");
    walk(doc.components, "#/components");
    expect(bare).toEqual([]);
  });

  it("lists on each operation exactly the query parameters its route reads, an array where it is repeatable", () => {
    for (const o of operations) {
      const r = ROUTES.find((x) => x.operationId === o.op.operationId);
      if (!r) continue;
      const documented = Object.fromEntries(
        o.parameters
          .filter((p) => p.in === "query")
          .map((p) => [p.name, p.schema?.type === "array" && p.explode !== false ? "repeatable" : "single"]),
      );
      expect([r.operationId, documented]).toEqual([r.operationId, r.query ?? {}]);
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

describe("the category components (generated from the category registry)", () => {
  const schemas = doc.components.schemas as Record<string, any>;
  const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
  const mapping: Record<string, string> = schemas.CreatePassportRequest.discriminator.mapping;
  const categories = Object.keys(mapping);
  const prefix = (id: string) =>
    mapping[id]!.replace(/^#\/components\/schemas\/Create(\w+)PassportRequest$/, "$1");

  /** Every object node of a schema with the path to it. */
  function objects(node: any, at = ""): [string, any][] {
    if (!node || typeof node !== "object") return [];
    const here: [string, any][] =
      node.type === "object" || node.type?.includes?.("object") ? [[at, node]] : [];
    const props = Object.entries((node.properties ?? {}) as Record<string, any>).flatMap(([k, v]) =>
      objects(v, `${at}/${k}`),
    );
    const nested = ["items", "oneOf", "anyOf"].flatMap((k) =>
      [node[k]].flat().flatMap((v: any, i: number) => objects(v, `${at}/${k}${i}`)),
    );
    return [...here, ...props, ...nested];
  }

  it("discriminates a create request by category, each with its category's data", () => {
    expect(categories.length).toBeGreaterThan(0);
    expect(schemas.CreatePassportRequest.oneOf).toEqual(
      categories.map((id) => {
        return { $ref: mapping[id] };
      }),
    );
    for (const id of categories) {
      const create = schemas[`Create${prefix(id)}PassportRequest`];
      expect(create.properties.category.const).toBe(id);
      expect(create.additionalProperties).toBe(false);
      expect(create.properties.data.oneOf).toEqual([ref(`${prefix(id)}Data`), { type: "null" }]);
      expect(schemas[`${prefix(id)}Data`].additionalProperties).toBe(false);
    }
  });

  it("answers a passport typed by its category, and any other category as an open passport", () => {
    expect(schemas.Passport.oneOf).toEqual([
      ...categories.map((id) => ref(`${prefix(id)}Passport`)),
      ref("PassportOfOtherCategory"),
    ]);
    expect(schemas.Passport.discriminator).toBeUndefined();
    expect(schemas.PassportOfOtherCategory.allOf[1].properties.category.not.enum).toEqual(categories);
    for (const id of categories) {
      const member = schemas[`${prefix(id)}Passport`].allOf[1];
      expect(member.properties).toEqual({
        category: { type: "string", const: id },
        data: ref(`${prefix(id)}DataRead`),
      });
      // As read, the same keys at every level, and open to keys added later.
      const read = objects(schemas[`${prefix(id)}DataRead`]);
      const served = objects(schemas[`${prefix(id)}Data`]);
      expect(read.map(([at, o]) => [at, Object.keys(o.properties ?? {})])).toEqual(
        served.map(([at, o]) => [at, Object.keys(o.properties ?? {})]),
      );
      expect(read.filter(([, o]) => o.additionalProperties === false)).toEqual([]);
    }
  });

  it("types a PATCH's data as the merge patch it is: every key optional, null removes it", () => {
    expect(schemas.PassportDataPatch.anyOf).toEqual(categories.map((id) => ref(`${prefix(id)}DataPatch`)));
    for (const id of categories) {
      const patch = schemas[`${prefix(id)}DataPatch`];
      const served = schemas[`${prefix(id)}Data`];
      expect(Object.keys(patch.properties)).toEqual(Object.keys(served.properties));
      // Objects are merged key by key; an array (and what is in it) replaces the old value whole.
      for (const [at, o] of objects(patch)) {
        if (!o.properties || at.includes("/items")) continue;
        expect([at, o.required]).toEqual([at, undefined]);
        for (const [k, p] of Object.entries(o.properties as Record<string, any>)) {
          const admitsNull = p.type?.includes?.("null") || p.oneOf?.some((x: any) => x.type === "null");
          expect([`${at}/${k}`, Boolean(admitsNull)]).toEqual([`${at}/${k}`, true]);
        }
      }
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

  it("lists in the error envelope of each status exactly the codes of that status", () => {
    const perStatus = new Map<number, string[]>(
      Object.entries(doc.components.schemas as Record<string, any>)
        .filter(([name]) => /^ErrorEnvelope\d{3}$/.test(name))
        .map(([name, s]) => [Number(name.slice(-3)), s.allOf[1].properties.error.properties.code.enum]),
    );
    for (const [status, codes] of perStatus)
      expect([status, [...codes].sort()]).toEqual([
        status,
        Object.entries(table)
          .filter(([, e]) => e.status === status)
          .map(([c]) => c)
          .sort(),
      ]);
    // The statuses no operation answers have no envelope (no unused component): 405 is answered
    // for a known path and another method (the introduction says so; the e2e validator checks
    // it).
    const statuses = [...new Set(Object.values(table).map((e) => e.status))];
    expect(statuses.filter((st) => !perStatus.has(st)).sort()).toEqual([405]);
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
  it("is the YAML source and the services' operations as they are today (else run `npm run -s gen:openapi`)", () => {
    const root = path.join(__dirname, "..", "..", "..");
    const fresh = execFileSync(process.execPath, ["tools/gen-openapi.mjs", "--print"], {
      cwd: root,
      maxBuffer: 64 * 1024 * 1024,
    });
    expect(OPENAPI_DOCUMENT).toEqual(JSON.parse(fresh.toString("utf8")));
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
