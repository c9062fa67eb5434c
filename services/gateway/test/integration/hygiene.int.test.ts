/**
 * Input hygiene at the edge, limits on refusals, response headers and Node's own refusals (docs/decisions/0019),
 * on the app with the real Authenticator, store and in-process rate limiter. The passport service is a fake that
 * records its calls: a refused request must never reach it.
 */
import net from "node:net";
import type { AddressInfo } from "node:net";
import type { Server } from "node:http";
import { createLogger, type CallOptions } from "@dpp/kit";
import { createDb } from "@dpp/kit/internal";
import { passportV1, timestampFromDate } from "@dpp/proto";
import { Authenticator } from "../../src/modules/identity/authenticator";
import { IdentityRepository } from "../../src/modules/identity/identity.repository";
import { generateKeyText } from "../../src/modules/identity/keys";
import { createApp } from "../../src/http/app";
import { answerClientErrors } from "../../src/http/client-errors";
import { fakeModuleDeps, gatewayModules, type ModuleDeps } from "../../src/modules";
import { RateLimiter } from "../../src/ratelimit/limiter";
import { routeTable } from "../../src/routes";
import type { GatewayDB } from "../../src/store/schema";
import { startStore, type Store, httpRequest, type HttpRequestOptions, type HttpResponse } from "../harness";

const DOCS = "https://docs.test/errors";
const log = createLogger("gateway-test", "silent");

const calls: { method: string; req: unknown }[] = [];
const passportMessage = (): passportV1.Passport => ({
  $typeName: "dpp.passport.v1.Passport",
  id: "pp_1",
  organizationId: org.id,
  category: "textile",
  status: passportV1.PassportStatus.DRAFT,
  version: 1,
  livemode: false,
  createdAt: timestampFromDate(new Date("2026-01-02T03:04:05.678Z")),
  updatedAt: timestampFromDate(new Date("2026-01-02T03:04:05.678Z")),
  dataJson: "{}",
});
const passport = Object.fromEntries(
  ["createPassport", "updatePassport", "getPassport", "listPassports", "listCategories"].map((method) => [
    method,
    async (req: unknown, _opts: CallOptions) => {
      calls.push({ method, req });
      if (method === "listPassports") return { passports: [], hasMore: false, nextCursor: "" };
      if (method === "listCategories") return { categories: [] };
      return { passport: passportMessage() };
    },
  ]),
) as unknown as ModuleDeps["passport"];

let s: Store;
let org: { id: string };
let other: { id: string };
let keys: { test: string; readOnly: string; readOnlyId: string };
const servers: Server[] = [];
const limiters: RateLimiter[] = [];

async function listen(o: {
  identity?: IdentityRepository;
  limits?: { perKey: number; anonymous: number; authFailures: number };
  trustProxy?: number;
}): Promise<string> {
  const identity = o.identity ?? s.identity;
  let rateLimiter: RateLimiter | undefined;
  if (o.limits) {
    rateLimiter = new RateLimiter({
      keyPrefix: `test:${Math.random()}`,
      perKeyPerMinute: o.limits.perKey,
      anonymousPerMinute: o.limits.anonymous,
      authFailuresPerMinute: o.limits.authFailures,
      log,
    });
    limiters.push(rateLimiter);
  }
  const app = createApp({
    authenticator: new Authenticator(identity),
    routes: routeTable(gatewayModules(fakeModuleDeps({ passport, identity }))),
    log,
    docsBaseUrl: DOCS,
    trustProxy: o.trustProxy ?? 0,
    ready: async () => undefined,
    rateLimiter,
  });
  const server = await new Promise<Server>((resolve) => {
    const x = app.listen(0, "127.0.0.1", () => resolve(x));
    answerClientErrors(x, DOCS);
  });
  servers.push(server);
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

let base: string;

beforeAll(async () => {
  s = await startStore("gw_hygiene");
  org = await s.admin.createOrganization("Acme", "pro", "active");
  other = await s.admin.createOrganization("Other", "pro", "active");
  const test = await s.admin.createKey({ organizationId: org.id, livemode: false });
  const readOnly = await s.admin.createKey({
    organizationId: org.id,
    livemode: false,
    scopes: ["passports:read"],
  });
  keys = { test: test.key, readOnly: readOnly.key, readOnlyId: readOnly.record.id };
  base = await listen({});
});
afterAll(async () => {
  for (const server of servers) {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  }
  for (const l of limiters) await l.close();
  await s?.close();
});
afterEach(() => {
  calls.length = 0;
});

type Res = HttpResponse;

const request = (path: string, o: HttpRequestOptions & { base?: string } = {}): Promise<Res> =>
  httpRequest(o.base ?? base, path, o);

function expectEnvelope(res: Res, status: number, code: string) {
  expect({ status: res.status, code: res.body?.error?.code }).toEqual({ status, code });
  expect(Object.keys(res.body.error).sort()).toEqual([
    "code",
    "details",
    "documentation_url",
    "message",
    "request_id",
  ]);
  expect(res.body.error.request_id).toBe(res.headers.get("request-id"));
  return res.body.error as { code: string; message: string; details: any };
}

/** One HTTP/1.1 exchange written byte for byte on a socket: what Node's parser sees, nothing normalised. */
function rawExchange(port: number, text: string | Buffer): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, "127.0.0.1", () => socket.write(text));
    const chunks: Buffer[] = [];
    socket.on("data", (c) => chunks.push(c));
    socket.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    socket.on("error", reject);
    setTimeout(() => {
      socket.destroy();
      resolve(Buffer.concat(chunks).toString("utf8"));
    }, 2000).unref();
  });
}

function parseRaw(response: string) {
  const [head, ...rest] = response.split("\r\n\r\n");
  const [statusLine, ...headerLines] = head!.split("\r\n");
  const headers = Object.fromEntries(
    headerLines.map((l) => [l.slice(0, l.indexOf(":")).toLowerCase(), l.slice(l.indexOf(":") + 1).trim()]),
  );
  return { status: Number(statusLine!.split(" ")[1]), headers, body: rest.join("\r\n") };
}

const portOf = (url: string) => Number(new URL(url).port);
const passports = () => `/v1/organizations/${org.id}/passports`;

describe("bodies: one strict reader before any handler", () => {
  it("refuses NUL and unpaired surrogates in any string of a body with 422 at its pointer", async () => {
    const res = await request(passports(), {
      key: keys.test,
      raw: '{"category":"textile","external_id":"A\\u0000","data":{"product_name":"\\ud800x"}}',
    });
    expect(expectEnvelope(res, 422, "validation_failed").details.issues).toEqual([
      { source: { pointer: "/external_id" }, rule: "nul_character", message: expect.any(String) },
      { source: { pointer: "/data/product_name" }, rule: "lone_surrogate", message: expect.any(String) },
    ]);
    const patch = await request(`${passports()}/pp_1`, {
      key: keys.test,
      method: "PATCH",
      raw: '{"data":{"\\udfffkey":"v"}}',
    });
    expect(expectEnvelope(patch, 422, "validation_failed").details.issues[0].rule).toBe("lone_surrogate");
    expect(calls).toEqual([]);
  });

  it("refuses a body that is not UTF-8 with 400 instead of storing U+FFFD", async () => {
    const raw = Buffer.concat([
      Buffer.from('{"category":"textile","external_id":"'),
      Buffer.from([0xff, 0xfe]),
      Buffer.from('"}'),
    ]);
    const res = await request(passports(), { key: keys.test, raw });
    expect(expectEnvelope(res, 400, "invalid_request").details).toEqual({
      issues: [{ source: { pointer: "" }, rule: "utf8" }],
    });
    const utf16 = await request(passports(), {
      key: keys.test,
      raw: "{}",
      headers: { "content-type": "application/json; charset=utf-16" },
    });
    expectEnvelope(utf16, 415, "unsupported_media_type");
    expect(calls).toEqual([]);
  });

  it("refuses JSON nested 10,000 levels deep (20 KB) with 400 max_depth, and the gateway keeps answering", async () => {
    const raw = '{"category":"textile","data":' + '{"a":'.repeat(10_000) + "1" + "}".repeat(10_001);
    const res = await request(passports(), { key: keys.test, raw });
    const e = expectEnvelope(res, 400, "invalid_request");
    expect(e.details.issues[0]).toMatchObject({ rule: "max_depth" });
    const arrays = await request(passports(), {
      key: keys.test,
      raw: "[".repeat(10_000) + "]".repeat(10_000),
    });
    expect(expectEnvelope(arrays, 400, "invalid_request").details.issues[0].rule).toBe("max_depth");
    expect((await request(passports(), { key: keys.test })).status).toBe(200);
  });

  it("refuses duplicate member names with 400 (no last-one-wins, even for category)", async () => {
    const res = await request(passports(), {
      key: keys.test,
      raw: '{"category":"textile","category":"battery"}',
    });
    expect(expectEnvelope(res, 400, "invalid_request").details).toEqual({
      issues: [{ source: { pointer: "/category" }, rule: "duplicate_member" }],
    });
    expect(calls).toEqual([]);
  });

  it('refuses PATCH {"data": null} with 422; fields are cleared one by one', async () => {
    const res = await request(`${passports()}/pp_1`, {
      key: keys.test,
      method: "PATCH",
      body: { data: null },
    });
    expect(expectEnvelope(res, 422, "validation_failed").details.issues).toEqual([
      { source: { pointer: "/data" }, rule: "type", message: expect.stringContaining("inside data") },
    ]);
    expect(calls).toEqual([]);
    const clear = await request(`${passports()}/pp_1`, {
      key: keys.test,
      method: "PATCH",
      body: { data: { gtin: null } },
    });
    expect(clear.status).toBe(200);
    expect(calls).toEqual([
      { method: "updatePassport", req: { id: "pp_1", patchJson: '{"data":{"gtin":null}}' } },
    ]);
  });
});

describe("path, query and headers: one check for every route", () => {
  it("refuses NUL in a path parameter with 400 naming it, before anything is looked up", async () => {
    for (const [path, parameter] of [
      [`${passports()}/pp%00x`, "id"],
      [`/v1/organizations/${org.id}%00/passports`, "organization"],
      [`/v1/organizations/${org.id}/grants/key%00`, "keyId"],
    ] as const) {
      const res = await request(path, { key: keys.test, method: path.includes("grants") ? "DELETE" : "GET" });
      expect(expectEnvelope(res, 400, "invalid_request").details.issues).toEqual([
        { source: { parameter }, rule: "nul_character", message: expect.any(String) },
      ]);
    }
    // Invalid UTF-8 (an encoded surrogate included) in a path is 400 too.
    for (const id of ["%FF", "%ED%A0%80"])
      expectEnvelope(await request(`${passports()}/${id}`, { key: keys.test }), 400, "invalid_request");
    expect(calls).toEqual([]);
  });

  it("refuses NUL and invalid UTF-8 in the query with 400 naming the parameter", async () => {
    const nul = await request(`${passports()}?category=%00`, { key: keys.test });
    expect(expectEnvelope(nul, 400, "invalid_request").details.issues).toEqual([
      { source: { parameter: "category" }, rule: "nul_character", message: expect.any(String) },
    ]);
    const bad = await request(`${passports()}?category=%FF`, { key: keys.test });
    expect(expectEnvelope(bad, 400, "invalid_request").details.issues).toEqual([
      { source: { parameter: "category" }, rule: "utf8", message: expect.any(String) },
    ]);
    expectEnvelope(await request(`/v1/categories?x=%ED%A0%80`), 400, "invalid_request");
    expect(calls).toEqual([]);
    expect((await request(`${passports()}?category=t%C3%A9`, { key: keys.test })).status).toBe(200);
  });

  it("refuses a query parameter the operation does not read, brackets included, instead of answering unfiltered", async () => {
    const unknown = (parameter: string, message: string | RegExp) => ({
      source: { parameter },
      rule: "unknown_parameter",
      message: typeof message === "string" ? message : expect.stringMatching(message),
    });
    const refused = async (path: string) =>
      expectEnvelope(await request(path, { key: keys.test }), 400, "invalid_request");

    const brackets = await refused(`${passports()}?status%5B%5D=published`);
    expect(brackets.details.issues).toEqual([
      unknown(
        "status[]",
        'The query parameter "status[]" is not read: brackets are not query syntax here; send status=<value>, once.',
      ),
    ]);
    expect(brackets.message).toBe(brackets.details.issues[0].message);
    expect((await refused(`${passports()}?status[in]=draft&limit=5`)).details.issues).toEqual([
      unknown("status[in]", /send status=<value>, once\.$/),
    ]);
    // The feed's repeatable `type` is named as such; the events service is never called.
    expect(
      (await refused(`/v1/organizations/${org.id}/events?type[]=passport.created`)).details.issues,
    ).toEqual([unknown("type[]", /send type=<value>, repeated for several values \(type=a&type=b\)\.$/)]);
    // Any other name, in any case, is refused too; every unknown parameter is listed once, in the order sent.
    const several = await refused(`${passports()}?foo=1&Status=draft&limit=5&foo=2`);
    expect(several.details.issues).toEqual([
      unknown(
        "foo",
        'The query parameter "foo" is not read by this operation; it takes "limit", "cursor", "status", "category", "updated_since".',
      ),
      unknown("Status", /^The query parameter "Status" is not read by this operation/),
    ]);
    expect(several.message).toMatch(/^The query parameters "foo", "Status" are not read by this operation/);
    // Operations without a query, the anonymous ones included.
    expect((await refused("/v1/whoami?verbose=1")).details.issues).toEqual([
      unknown(
        "verbose",
        'The query parameter "verbose" is not read by this operation; it takes no query parameter.',
      ),
    ]);
    expectEnvelope(await request("/v1/categories?page=2"), 400, "invalid_request");
    expectEnvelope(await request("/v1/openapi.json?v=2"), 400, "invalid_request");
    expect(calls).toEqual([]);

    // The parameters an operation lists are read as before.
    expect(
      (await request(`${passports()}?status=draft&limit=5&category=textile`, { key: keys.test })).status,
    ).toBe(200);
    expect(calls).toEqual([
      { method: "listPassports", req: expect.objectContaining({ limit: 5, category: "textile" }) },
    ]);
  });

  it("refuses Authorization sent twice with 400 instead of taking the first", async () => {
    const port = portOf(base);
    const answer = parseRaw(
      await rawExchange(
        port,
        `GET /v1/whoami HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${keys.test}\r\nAuthorization: Bearer nonsense\r\nConnection: close\r\n\r\n`,
      ),
    );
    expect(answer.status).toBe(400);
    const e = JSON.parse(answer.body).error;
    expect(e.code).toBe("invalid_request");
    expect(e.details.issues).toEqual([
      { source: { header: "Authorization" }, rule: "single_value", message: expect.any(String) },
    ]);
  });
});

describe("Node's own refusals", () => {
  it("answers a malformed request line and oversized headers with the envelope", async () => {
    const port = portOf(base);
    const garbage = parseRaw(await rawExchange(port, "NOT HTTP AT ALL\r\n\r\n"));
    expect(garbage.status).toBe(400);
    expect(garbage.headers["request-id"]).toMatch(/^req_[0-9a-f]{24}$/);
    expect(garbage.headers["content-type"]).toMatch(/^application\/json/);
    const e = JSON.parse(garbage.body).error;
    expect(e).toMatchObject({ code: "invalid_request", request_id: garbage.headers["request-id"] });
    expect(e.details).toEqual({ reason: "malformed_request" });

    // A NUL in a header value: Node refuses the request itself; the answer is still the envelope.
    const nul = parseRaw(
      await rawExchange(port, "GET /v1/categories HTTP/1.1\r\nHost: x\r\nX-A: a\u0000b\r\n\r\n"),
    );
    expect(nul.status).toBe(400);
    expect(JSON.parse(nul.body).error).toMatchObject({
      code: "invalid_request",
      details: { reason: "malformed_request" },
    });

    const big = parseRaw(
      await rawExchange(
        port,
        `GET /v1/categories HTTP/1.1\r\nHost: x\r\nX-Big: ${"a".repeat(20_000)}\r\n\r\n`,
      ),
    );
    expect(big.status).toBe(400);
    expect(JSON.parse(big.body).error).toMatchObject({
      code: "invalid_request",
      details: { reason: "headers_too_large", max_header_bytes: expect.any(Number) },
    });
  });
});

describe("limits on refusals", () => {
  it("limits failed authentications per client address: past the budget a bad key is 429, a valid key is served", async () => {
    const url = await listen({ limits: { perKey: 1000, anonymous: 1000, authFailures: 5 }, trustProxy: 1 });
    const revoked = await s.admin.createKey({ organizationId: org.id, livemode: false });
    await s.admin.revokeKey(revoked.record.id);
    const lookups = jest.spyOn(s.identity, "findKeyByDigest");
    try {
      const from = (address: string) => ({ "x-forwarded-for": address });
      for (let i = 0; i < 5; i++) {
        const res = await request("/v1/whoami", {
          base: url,
          key: generateKeyText(false),
          headers: from("10.0.0.1"),
        });
        expectEnvelope(res, 401, "invalid_key");
      }
      expect(lookups).toHaveBeenCalledTimes(5);
      const over = await request("/v1/whoami", {
        base: url,
        key: generateKeyText(false),
        headers: from("10.0.0.1"),
      });
      expect(expectEnvelope(over, 429, "rate_limited").details).toMatchObject({
        policy: "auth-failures",
        limit: 5,
      });
      expect(Number(over.headers.get("retry-after"))).toBeGreaterThan(0);
      expect(over.headers.get("ratelimit-policy")).toBe('"auth-failures";q=5;w=60');
      // A valid key from that address is still served, and counted against its own limit only.
      const valid = await request("/v1/whoami", { base: url, key: keys.test, headers: from("10.0.0.1") });
      expect(valid.status).toBe(200);
      expect(valid.headers.get("ratelimit-policy")).toBe('"per-key";q=1000;w=60');
      expect(
        (await request(passports(), { base: url, key: keys.test, headers: from("10.0.0.1") })).status,
      ).toBe(200);
      // A malformed key is refused without a lookup; a revoked one no longer tells its id: both are 429.
      lookups.mockClear();
      const malformed = await request("/v1/whoami", {
        base: url,
        key: "not-a-key",
        headers: from("10.0.0.1"),
      });
      expectEnvelope(malformed, 429, "rate_limited");
      expect(lookups).not.toHaveBeenCalled();
      const gone = await request("/v1/whoami", { base: url, key: revoked.key, headers: from("10.0.0.1") });
      expect(expectEnvelope(gone, 429, "rate_limited").details).not.toHaveProperty("key_id");
      // No key at all on a route that needs one is a failed authentication too.
      expectEnvelope(
        await request("/v1/whoami", { base: url, headers: from("10.0.0.1") }),
        429,
        "rate_limited",
      );
      // Another address is not concerned.
      expectEnvelope(
        await request("/v1/whoami", { base: url, key: revoked.key, headers: from("10.0.0.2") }),
        401,
        "key_revoked",
      );
    } finally {
      lookups.mockRestore();
    }
  });

  it("counts a key's refused requests (403, 404, 400) against its limit", async () => {
    const url = await listen({ limits: { perKey: 3, anonymous: 1000, authFailures: 1000 } });
    const write = await request(passports(), {
      base: url,
      key: keys.readOnly,
      body: { category: "textile" },
    });
    expectEnvelope(write, 403, "insufficient_scope");
    expectEnvelope(
      await request(`/v1/organizations/${other.id}/passports`, { base: url, key: keys.readOnly }),
      404,
      "organization_not_found_or_not_granted",
    );
    expectEnvelope(
      await request(`${passports()}?limit=0`, { base: url, key: keys.readOnly }),
      400,
      "invalid_request",
    );
    for (const path of [passports(), `/v1/organizations/${other.id}/passports`]) {
      const res = await request(path, { base: url, key: keys.readOnly });
      expect(expectEnvelope(res, 429, "rate_limited").details).toMatchObject({ policy: "per-key", limit: 3 });
      expect(res.headers.get("retry-after")).toMatch(/^\d+$/);
    }
  });
});

describe("the database out of reach", () => {
  it("answers 500 internal_error with Retry-After, reason database_unavailable, nothing leaked", async () => {
    const unreachable = createDb<GatewayDB>({
      url: "postgres://postgres@127.0.0.1:1/none",
      schema: "gateway",
      applicationName: "gw-test-down",
      max: 1,
    });
    try {
      const url = await listen({ identity: new IdentityRepository(unreachable) });
      const res = await request("/v1/whoami", { base: url, key: keys.test });
      const e = expectEnvelope(res, 500, "internal_error");
      expect(e.details).toEqual({ reason: "database_unavailable" });
      expect(res.headers.get("retry-after")).toBe("1");
      expect(res.text).not.toMatch(/ECONNREFUSED|127\.0\.0\.1/);
    } finally {
      await unreachable.destroy();
    }
  });
});

describe("response headers", () => {
  it("puts the security headers on every response and no X-Powered-By; authenticated answers are not cached", async () => {
    const responses = [
      await request(passports(), { key: keys.test }),
      await request(passports()),
      await request("/v1/categories"),
      await request("/v1/nothing"),
      await request("/healthz"),
      await request("/docs"),
    ];
    for (const res of responses) {
      expect(res.headers.get("x-powered-by")).toBeNull();
      expect(res.headers.get("x-content-type-options")).toBe("nosniff");
      expect(res.headers.get("referrer-policy")).toBe("no-referrer");
      expect(res.headers.get("x-frame-options")).toBe("DENY");
      expect(res.headers.get("content-security-policy")).toMatch(
        /default-src 'none'.*frame-ancestors 'none'/,
      );
    }
    for (const res of responses.slice(0, 5)) expect(res.headers.get("cache-control")).toBe("no-store");
  });

  it("serves /docs with a strict CSP (inline scripts by hash) and /docs and /v1/openapi.json with ETag and 304", async () => {
    const docs = await request("/docs");
    const csp = docs.headers.get("content-security-policy")!;
    expect(csp).toMatch(/script-src( 'sha256-[A-Za-z0-9+/=]+')+;/);
    expect(csp).not.toMatch(/unsafe-eval|script-src[^;]*unsafe-inline|\*/);
    for (const path of ["/docs", "/v1/openapi.json"]) {
      const first = await request(path);
      expect(first.status).toBe(200);
      const etag = first.headers.get("etag")!;
      // fetch accepts gzip: the variant's ETag names its encoding.
      expect(etag).toMatch(/^"[A-Za-z0-9_-]{32}-gzip"$/);
      expect(first.headers.get("cache-control")).toBe("public, max-age=300");
      const again = await request(path, { headers: { "if-none-match": etag } });
      expect(again.status).toBe(304);
      expect(again.text).toBe("");
      expect(again.headers.get("etag")).toBe(etag);
      const changed = await request(path, { headers: { "if-none-match": '"other"' } });
      expect(changed.status).toBe(200);
    }
  });
});
