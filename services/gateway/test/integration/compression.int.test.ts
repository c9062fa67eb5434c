/**
 * Compressed answers and the limit of the public documents (docs/decisions/0045), on the app with the real
 * Authenticator, store and in-process rate limiter. Requests are sent with node:http, which decodes nothing, so
 * the bytes on the wire and their headers are what the tests see.
 */
import http from "node:http";
import zlib from "node:zlib";
import type { AddressInfo } from "node:net";
import type { Server } from "node:http";
import { createLogger, type CallOptions } from "@dpp/kit";
import { passportV1, timestampFromDate } from "@dpp/proto";
import { Authenticator } from "../../src/modules/identity/authenticator";
import { createApp } from "../../src/http/app";
import { DOCS_HTML } from "../../src/http/docs.generated";
import { DOCS_PAGE } from "../../src/http/docs";
import { fakeModuleDeps, gatewayModules, type ModuleDeps } from "../../src/modules";
import { OPENAPI_DOCUMENT } from "../../src/openapi.generated";
import { RateLimiter } from "../../src/ratelimit/limiter";
import { routeTable } from "../../src/routes";
import { startStore, type Store } from "../harness";

const log = createLogger("gateway-test", "silent");

/** A passport whose answer is about 2 KB, over the threshold; `pp_small` answers one under it. */
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
  dataJson: JSON.stringify(
    id === "pp_small"
      ? { product_name: "Shirt" }
      : {
          product_name: "Organic cotton T-shirt",
          product_description: "A plain T-shirt of organic cotton, knitted and sewn in Portugal. ".repeat(12),
          material_composition: [
            { fiber: "cotton", percentage: 95 },
            { fiber: "elastane", percentage: 5 },
          ],
          recycling_instructions: "Return to a textile collection point.",
        },
  ),
});
const passport = {
  getPassport: async (req: { id: string }, _opts: CallOptions) => ({ passport: passportMessage(req.id) }),
} as unknown as ModuleDeps["passport"];
const events = {} as ModuleDeps["events"];

let s: Store;
let org: { id: string };
let key: string;
const servers: Server[] = [];
const limiters: RateLimiter[] = [];

async function listen(anonymousPerMinute = 1000): Promise<number> {
  const rateLimiter = new RateLimiter({
    keyPrefix: `test:${Math.random()}`,
    perKeyPerMinute: 1000,
    anonymousPerMinute,
    authFailuresPerMinute: 1000,
    log,
  });
  limiters.push(rateLimiter);
  const app = createApp({
    authenticator: new Authenticator(s.identity),
    routes: routeTable(gatewayModules(fakeModuleDeps({ passport, events, identity: s.identity }))),
    log,
    docsBaseUrl: "https://docs.test/errors",
    trustProxy: 1,
    ready: async () => undefined,
    rateLimiter,
  });
  const server = await new Promise<Server>((resolve) => {
    const x = app.listen(0, "127.0.0.1", () => resolve(x));
  });
  servers.push(server);
  return (server.address() as AddressInfo).port;
}

interface Raw {
  status: number;
  headers: http.IncomingHttpHeaders;
  /** The body as sent, not decoded. */
  body: Buffer;
}

function send(
  port: number,
  path: string,
  headers: Record<string, string> = {},
  method = "GET",
): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: "127.0.0.1", port, path, method, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () =>
        resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }),
      );
    });
    req.on("error", reject);
    req.end();
  });
}

/** The body decoded as its Content-Encoding says. */
function decoded(res: Raw): string {
  const encoding = res.headers["content-encoding"];
  const bytes =
    encoding === "br"
      ? zlib.brotliDecompressSync(res.body)
      : encoding === "gzip"
        ? zlib.gunzipSync(res.body)
        : res.body;
  return bytes.toString("utf8");
}

let port: number;
const auth = () => ({ authorization: `Bearer ${key}` });
const passportPath = (id = "pp_1") => `/v1/organizations/${org.id}/passports/${id}`;

beforeAll(async () => {
  s = await startStore("gw_compression");
  org = await s.admin.createOrganization("Acme", "pro", "active");
  key = (await s.admin.createKey({ organizationId: org.id, livemode: false })).key;
  port = await listen();
});
afterAll(async () => {
  for (const server of servers) {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  }
  for (const l of limiters) await l.close();
  await s?.close();
});

describe("JSON answers", () => {
  it("compresses an answer over 1 KiB with the encoding the client prefers; decoded, it is the same JSON", async () => {
    const plain = await send(port, passportPath(), auth());
    expect(plain.status).toBe(200);
    expect(plain.headers["content-encoding"]).toBeUndefined();
    expect(plain.headers.vary).toBe("Accept-Encoding");
    expect(plain.body.length).toBeGreaterThan(1024);
    expect(Number(plain.headers["content-length"])).toBe(plain.body.length);
    const json = JSON.parse(plain.body.toString("utf8"));
    expect(json).toMatchObject({ object: "passport", id: "pp_1" });

    for (const [accept, encoding] of [
      ["gzip, deflate, br", "br"],
      ["gzip, deflate", "gzip"],
      ["br;q=0.5, gzip", "gzip"],
      ["*", "br"],
    ] as const) {
      const res = await send(port, passportPath(), { ...auth(), "accept-encoding": accept });
      expect([accept, res.status, res.headers["content-encoding"]]).toEqual([accept, 200, encoding]);
      expect(res.headers.vary).toBe("Accept-Encoding");
      expect(res.headers["content-type"]).toBe("application/json; charset=utf-8");
      expect(Number(res.headers["content-length"])).toBe(res.body.length);
      expect(res.body.length).toBeLessThan(plain.body.length * 0.7);
      expect(JSON.parse(decoded(res))).toEqual(json);
    }
    // A HEAD says what the GET would send, without the body.
    const head = await send(port, passportPath(), { ...auth(), "accept-encoding": "br" }, "HEAD");
    expect([head.status, head.headers["content-encoding"], head.body.length]).toEqual([200, "br", 0]);
  });

  it("sends as it is an answer under 1 KiB, an error included, and any answer to a client that accepts no encoding", async () => {
    const every = { "accept-encoding": "gzip, deflate, br" };
    const small = await send(port, passportPath("pp_small"), { ...auth(), ...every });
    expect(small.status).toBe(200);
    expect(small.body.length).toBeLessThan(1024);
    const refused = await send(port, passportPath(), { authorization: "Bearer nonsense", ...every });
    expect(refused.status).toBe(401);
    const missing = await send(port, "/v1/nowhere", every);
    expect(missing.status).toBe(404);
    for (const res of [small, refused, missing]) {
      expect(res.headers["content-encoding"]).toBeUndefined();
      expect(res.headers.vary).toBe("Accept-Encoding");
      expect(JSON.parse(res.body.toString("utf8"))).toBeInstanceOf(Object);
    }
    for (const accept of ["identity", "deflate", "br;q=0, gzip;q=0"]) {
      const res = await send(port, passportPath(), { ...auth(), "accept-encoding": accept });
      expect([accept, res.headers["content-encoding"]]).toEqual([accept, undefined]);
      expect(JSON.parse(res.body.toString("utf8")).id).toBe("pp_1");
    }
  });
});

describe("the public documents", () => {
  it("serves /docs compressed with brotli, about a fifth of the page, with an ETag of its own and 304", async () => {
    await DOCS_PAGE.compressed("br");
    const res = await send(port, "/docs", { "accept-encoding": "gzip, deflate, br" });
    expect(res.status).toBe(200);
    expect(res.headers["content-encoding"]).toBe("br");
    expect(res.headers.vary).toBe("Accept-Encoding");
    expect(res.headers["content-type"]).toBe("text/html; charset=utf-8");
    expect(res.body.length).toBeLessThan(Buffer.byteLength(DOCS_HTML) / 4);
    expect(Number(res.headers["content-length"])).toBe(res.body.length);
    expect(decoded(res)).toBe(DOCS_HTML);
    const etag = res.headers.etag!;
    expect(etag).toMatch(/^"[A-Za-z0-9_-]{32}-br"$/);
    const again = await send(port, "/docs", { "accept-encoding": "br", "if-none-match": etag });
    expect([again.status, again.body.length, again.headers.etag]).toEqual([304, 0, etag]);
    // Without Accept-Encoding: the page as it is, under another ETag.
    const plain = await send(port, "/docs");
    expect(plain.headers["content-encoding"]).toBeUndefined();
    expect(plain.body.toString("utf8")).toBe(DOCS_HTML);
    expect(plain.headers.etag).toBe(etag.replace("-br", ""));
    expect((await send(port, "/docs", { "if-none-match": etag })).status).toBe(200);
  });

  it("serves /v1/openapi.json compressed, decoding to the document", async () => {
    for (const accept of ["gzip", "br"]) {
      const res = await send(port, "/v1/openapi.json", { "accept-encoding": accept });
      expect([res.status, res.headers["content-encoding"]]).toEqual([200, accept]);
      expect(res.headers.etag).toMatch(new RegExp(`-${accept}"$`));
      expect(res.headers["cache-control"]).toBe("public, max-age=300");
      expect(JSON.parse(decoded(res))).toEqual(OPENAPI_DOCUMENT);
    }
  });

  it("counts /docs and /v1/openapi.json against the client address's anonymous limit, 304s included", async () => {
    const limited = await listen(4);
    const from = (address: string) => ({ "x-forwarded-for": address });
    const first = await send(limited, "/docs", from("10.1.0.1"));
    expect(first.status).toBe(200);
    expect(first.headers["ratelimit-policy"]).toBe('"anonymous";q=4;w=60');
    expect(
      (await send(limited, "/docs", { ...from("10.1.0.1"), "if-none-match": first.headers.etag! })).status,
    ).toBe(304);
    expect((await send(limited, "/docs", from("10.1.0.1"), "HEAD")).status).toBe(200);
    expect((await send(limited, "/v1/openapi.json", from("10.1.0.1"))).status).toBe(200);
    for (const path of ["/docs", "/v1/openapi.json", "/v1/categories"]) {
      const over = await send(limited, path, { ...from("10.1.0.1"), "accept-encoding": "br" });
      expect([path, over.status]).toEqual([path, 429]);
      expect(over.headers["content-encoding"]).toBeUndefined();
      expect(Number(over.headers["retry-after"])).toBeGreaterThan(0);
      expect(JSON.parse(over.body.toString("utf8")).error).toMatchObject({
        code: "rate_limited",
        details: { policy: "anonymous", limit: 4 },
      });
    }
    // Another address is not concerned.
    expect((await send(limited, "/docs", from("10.1.0.2"))).status).toBe(200);
  });
});
