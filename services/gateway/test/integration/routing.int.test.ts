/**
 * Routing as a client sees it over HTTP: which request reaches which route, 404 and 405 with Allow, HEAD,
 * trailing slashes, case, and path parameters as sent (percent-encoded) and as the service receives them. The
 * requests are written as they are (node:http sends the path untouched; fetch would normalise it). The passport
 * service is a fake that records what it was asked.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import type { Server } from "node:http";
import { createLogger, type CallOptions } from "@dpp/kit";
import { passportV1, timestampFromDate } from "@dpp/proto";
import { Authenticator } from "../../src/modules/identity/authenticator";
import { createApp } from "../../src/http/app";
import { fakeModuleDeps, gatewayModules, type ModuleDeps } from "../../src/modules";
import { allowedMethods, routeTable, ROUTES } from "../../src/routes";
import { startStore, type Store } from "../harness";

const DOCS = "https://docs.test/errors";

const asked: { method: string; req: { id?: string; category?: string } }[] = [];
const passportMessage = (id: string): passportV1.Passport => ({
  $typeName: "dpp.passport.v1.Passport",
  id,
  organizationId: org.id,
  category: "textile",
  status: passportV1.PassportStatus.DRAFT,
  version: 1,
  livemode: false,
  createdAt: timestampFromDate(new Date("2026-01-02T03:04:05.678Z")),
  updatedAt: timestampFromDate(new Date("2026-01-02T03:04:05.678Z")),
  dataJson: "{}",
});
const passport = {
  getPassport: async (req: { id: string }, _opts: CallOptions) => {
    asked.push({ method: "getPassport", req });
    return { passport: passportMessage(req.id) };
  },
  listCategories: async (req: object, _opts: CallOptions) => {
    asked.push({ method: "listCategories", req });
    return { categories: [] };
  },
  listPassports: async (req: object, _opts: CallOptions) => {
    asked.push({ method: "listPassports", req });
    return { passports: [], hasMore: false, nextCursor: "" };
  },
} as unknown as ModuleDeps["passport"];

let s: Store;
let server: Server;
let port: number;
let org: { id: string };
let key: string;

beforeAll(async () => {
  s = await startStore("gw_routing");
  org = await s.admin.createOrganization("Acme", "pro", "active");
  key = (await s.admin.createKey({ organizationId: org.id, livemode: false })).key;
  const app = createApp({
    authenticator: new Authenticator(s.identity),
    routes: routeTable(gatewayModules(fakeModuleDeps({ passport, identity: s.identity }))),
    log: createLogger("gateway-test", "silent"),
    docsBaseUrl: DOCS,
    trustProxy: 0,
    ready: async () => undefined,
  });
  server = await new Promise<Server>((resolve) => {
    const x = app.listen(0, "127.0.0.1", () => resolve(x));
  });
  port = (server.address() as AddressInfo).port;
});
afterAll(async () => {
  if (server)
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  await s?.close();
});
afterEach(() => {
  asked.length = 0;
});

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  body: any;
}

/** One request with its path written exactly as given. */
function send(method: string, path: string, o: { key?: boolean; headers?: Record<string, string> } = {}) {
  const headers: Record<string, string> = { ...o.headers };
  if (o.key) headers.authorization = `Bearer ${key}`;
  return new Promise<Answer>((resolve, reject) => {
    const req = http.request({ host: "127.0.0.1", port, method, path, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8");
        let body: unknown;
        try {
          body = text ? JSON.parse(text) : undefined;
        } catch {
          body = undefined;
        }
        resolve({ status: res.statusCode!, headers: res.headers, text, body });
      });
    });
    req.on("error", reject);
    req.end();
  });
}

/** The answer is the error envelope with this status and code, and carries the headers of every answer. */
function refused(a: Answer, status: number, code: string) {
  expect([a.status, a.body?.error?.code]).toEqual([status, code]);
  expect(a.body.error.request_id).toBe(a.headers["request-id"]);
  expect(a.headers["request-id"]).toMatch(/^req_[0-9a-f]{24}$/);
  expect(a.headers["x-content-type-options"]).toBe("nosniff");
  expect(a.headers["cache-control"]).toBe("no-store");
  expect(a.headers["content-type"]).toBe("application/json; charset=utf-8");
  return a.body.error as { message: string; details: any };
}

const passports = () => `/v1/organizations/${org.id}/passports`;

describe("unknown paths", () => {
  it("answers 404 resource_not_found naming the path, under /v1 and elsewhere, before any credential is asked", async () => {
    for (const [path, named] of [
      ["/v1/nothing", "/v1/nothing"],
      ["/v1/categories/textile", "/v1/categories/textile"],
      [`${passports()}/pp_1/nope`, `${passports()}/pp_1/nope`],
      ["/v1", "/v1/"],
      ["/v1/", "/v1/"],
      ["/v1/nothing?x=1", "/v1/nothing"],
    ]) {
      const e = refused(await send("GET", path!), 404, "resource_not_found");
      expect(e.details).toEqual({ path: named });
      expect(e.message).toBe(`No endpoint at GET ${named}.`);
    }
    for (const path of ["/", "/nothing", "/v1x", "/v2/categories", "/openapi.json"]) {
      const e = refused(await send("POST", path), 404, "resource_not_found");
      expect(e.details).toEqual({ path });
      expect(e.message).toBe(`No endpoint at POST ${path}; the API lives under /v1.`);
    }
    expect(asked).toEqual([]);
  });

  it("answers the probes and /docs to GET and HEAD only: another method is 404", async () => {
    for (const path of ["/healthz", "/readyz", "/docs"]) {
      expect((await send("GET", path)).status).toBe(200);
      expect((await send("HEAD", path)).status).toBe(200);
      for (const method of ["POST", "DELETE", "OPTIONS"])
        refused(await send(method, path), 404, "resource_not_found");
    }
  });
});

describe("methods", () => {
  it("answers 405 method_not_allowed with the path's Allow list, HEAD with GET, before any credential is asked", async () => {
    for (const path of new Set(ROUTES.map((r) => r.path))) {
      const allow = allowedMethods(ROUTES, path);
      const concrete = `/v1${path.replace(/\{(\w+)\}/g, (_m, name: string) => (name === "organization" ? org.id : `x_${name}`))}`;
      for (const method of ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"].filter(
        (m) => !allow.includes(m),
      )) {
        const answer = await send(method, concrete);
        expect([method, path, answer.status]).toEqual([method, path, 405]);
        expect(answer.headers.allow).toBe(allow.join(", "));
        if (method === "HEAD") {
          expect(answer.text).toBe("");
          continue;
        }
        const e = refused(answer, 405, "method_not_allowed");
        expect(e.details).toEqual({ allow });
        expect(e.message).toBe(`${method} is not answered here; allowed: ${allow.join(", ")}.`);
      }
    }
    expect(asked).toEqual([]);
  });

  it("answers HEAD as the GET of the same path, without the body", async () => {
    const get = await send("GET", `${passports()}/pp_1`, { key: true });
    const head = await send("HEAD", `${passports()}/pp_1`, { key: true });
    expect(get.status).toBe(200);
    expect(head.status).toBe(200);
    expect(head.text).toBe("");
    expect(head.headers["content-length"]).toBe(String(Buffer.byteLength(get.text)));
    expect(head.headers["content-type"]).toBe("application/json; charset=utf-8");
    expect(asked.map((a) => a.method)).toEqual(["getPassport", "getPassport"]);
    // A HEAD is authenticated like its GET.
    refused(await send("GET", `${passports()}/pp_1`), 401, "invalid_key");
    expect((await send("HEAD", `${passports()}/pp_1`)).status).toBe(401);
  });
});

describe("path matching", () => {
  it("ignores one trailing slash, not two, and not an empty segment", async () => {
    expect((await send("GET", "/v1/categories/")).status).toBe(200);
    expect((await send("GET", `${passports()}/pp_1/`, { key: true })).status).toBe(200);
    expect((await send("GET", "/healthz/")).status).toBe(200);
    expect((await send("GET", "/docs/")).status).toBe(200);
    refused(await send("GET", "/v1/categories//"), 404, "resource_not_found");
    refused(await send("GET", "/v1//categories"), 404, "resource_not_found");
    refused(
      await send("GET", `/v1/organizations/${org.id}//passports`, { key: true }),
      404,
      "resource_not_found",
    );
    refused(await send("GET", "/healthz//"), 404, "resource_not_found");
  });

  it("matches the path after /v1 case-sensitively; /v1 itself, the probes and /docs in any case", async () => {
    for (const path of ["/v1/Categories", "/v1/CATEGORIES", `/v1/Organizations/${org.id}/passports`])
      refused(await send("GET", path, { key: true }), 404, "resource_not_found");
    expect((await send("GET", "/V1/categories")).status).toBe(200);
    expect((await send("GET", "/HEALTHZ")).status).toBe(200);
    expect((await send("GET", "/Docs")).status).toBe(200);
  });

  it("routes on the path alone: the query string and an absolute request target do not change the route", async () => {
    expect((await send("GET", `${passports()}?limit=1&category=%C3%A9`, { key: true })).status).toBe(200);
    expect((await send("GET", `http://api.example.test${passports()}/pp_1`, { key: true })).status).toBe(200);
    expect(asked.map((a) => a.method)).toEqual(["listPassports", "getPassport"]);
  });

  it("hands the service path parameters percent-decoded, `+` and `/` included as sent", async () => {
    for (const [sent, received] of [
      ["pp_1", "pp_1"],
      ["pp%5F1", "pp_1"],
      ["a%2Fb", "a/b"],
      ["a+b", "a+b"],
      ["a%20b", "a b"],
      ["%E2%82%AC", "€"],
      ["a.b", "a.b"],
    ]) {
      const answer = await send("GET", `${passports()}/${sent}`, { key: true });
      expect([sent, answer.status, answer.body.id]).toEqual([sent, 200, received]);
    }
    expect(asked.map((a) => a.req.id)).toEqual(["pp_1", "pp_1", "a/b", "a+b", "a b", "€", "a.b"]);
  });

  it("refuses a path parameter that is not percent-encoded UTF-8 with 400, before any credential is asked", async () => {
    for (const id of ["%FF", "%", "%zz", "%E2%82", "%ED%A0%80"]) {
      const e = refused(await send("GET", `${passports()}/${id}`), 400, "invalid_request");
      expect(e.message).toBe("The request could not be understood.");
    }
    // Whatever the method: the path is matched first.
    refused(await send("PUT", `${passports()}/%FF`), 400, "invalid_request");
    // A path that names no route is 404, whatever it holds.
    refused(await send("GET", `${passports()}/%FF/nope`), 404, "resource_not_found");
    expect(asked).toEqual([]);
  });
});

describe("answers", () => {
  it("answers a GET whose If-None-Match is * with 304 and no body, as express always did; another If-None-Match in full", async () => {
    const answer = await send("GET", `${passports()}/pp_1`, { key: true, headers: { "if-none-match": "*" } });
    expect(answer.status).toBe(304);
    expect(answer.text).toBe("");
    expect(answer.headers["request-id"]).toMatch(/^req_/);
    const other = await send("GET", `${passports()}/pp_1`, {
      key: true,
      headers: { "if-none-match": '"x"' },
    });
    expect(other.status).toBe(200);
  });
});
