/**
 * Request hygiene: media types, methods, sizes, malformed JSON, unknown paths, request ids, no leaks; and the
 * edge's input hygiene (docs/decisions/0019): text no service can store, invalid UTF-8, nesting, duplicates,
 * PATCH data:null, Node's own refusals, response headers; query parameters an operation does not read, compressed
 * answers and the anonymous limit of /docs (docs/decisions/0045). Each refusal stores nothing.
 */
import http from "node:http";
import net from "node:net";
import zlib from "node:zlib";
import { sql } from "kysely";
import { envelope, startHarness, type ApiResponse, type Harness, type Tenant } from "./support/harness";
import { storeReader, type StoreReader } from "./support/store-snapshot";

let h: Harness;
let t: Tenant;
let store: StoreReader;
const seen: ApiResponse[] = [];

beforeAll(async () => {
  h = await startHarness("e2e_hygiene");
  t = await h.tenant("Hygiene Brand");
  store = storeReader(h.db.url);
});
afterAll(async () => {
  await store?.close();
  await h?.close();
});

async function req(path: string, o: Parameters<Harness["request"]>[1] = {}) {
  const res = await h.request(path, o);
  seen.push(res);
  return res;
}

const passports = () => `/organizations/${t.organizationId}/passports`;

it("refuses a body that is not JSON with 415", async () => {
  const res = await req(passports(), {
    key: t.testKey,
    method: "POST",
    raw: "category=textile",
    headers: { "content-type": "application/x-www-form-urlencoded" },
  });
  expect(res.status).toBe(415);
  expect(envelope(res).code).toBe("unsupported_media_type");
  const noType = await req(passports(), { key: t.testKey, method: "POST", raw: '{"category":"general"}' });
  expect(noType.status).toBe(415);
});

it("answers 405 with Allow for a known path and another method", async () => {
  const res = await req(passports(), { key: t.testKey, method: "DELETE" });
  expect(res.status).toBe(405);
  expect(envelope(res).code).toBe("method_not_allowed");
  expect(res.headers.get("allow")).toBe("GET, HEAD, POST");
  const one = await req(`${passports()}/pp_x`, { key: t.testKey, method: "PUT", body: {} });
  expect(one.status).toBe(405);
  expect(one.headers.get("allow")).toBe("GET, HEAD, PATCH");
});

it("refuses a body over the ceiling with 413 and details.limit_bytes", async () => {
  const big = { category: "general", data: { product_description: "x".repeat(1024 * 1024 + 10) } };
  const res = await req(passports(), { key: t.testKey, body: big });
  expect(res.status).toBe(413);
  const e = envelope(res);
  expect(e.code).toBe("payload_too_large");
  expect(e.details.limit_bytes).toBe(1048576);
});

it("refuses malformed JSON with 400 invalid_request", async () => {
  const res = await req(passports(), {
    key: t.testKey,
    method: "POST",
    raw: '{"category": "general",',
    headers: { "content-type": "application/json" },
  });
  expect(res.status).toBe(400);
  expect(envelope(res).code).toBe("invalid_request");
  const notObject = await req(passports(), { key: t.testKey, body: ["category"] });
  expect(notObject.status).toBe(422);
  expect(envelope(notObject).details.issues[0].source.pointer).toBe("");
});

it("answers unknown paths in the envelope", async () => {
  for (const p of ["/nothing-here", `/organizations/${t.organizationId}/spaceships`]) {
    const res = await req(p, { key: t.testKey });
    expect(res.status).toBe(404);
    expect(envelope(res).code).toBe("resource_not_found");
  }
  const outside = await fetch(h.stack.baseUrl.replace(/\/v1$/, "/elsewhere"));
  expect(outside.status).toBe(404);
  expect(((await outside.json()) as any).error.code).toBe("resource_not_found");
  expect(outside.headers.get("request-id")).toMatch(/^req_/);
});

it("refuses an overlong or malformed path parameter cleanly", async () => {
  const long = await req(`${passports()}/${"x".repeat(300)}`, { key: t.testKey });
  expect(long.status).toBe(404);
  expect(envelope(long).code).toBe("resource_not_found");
  const bad = await req(`${passports()}/%E0%A4%A`, { key: t.testKey });
  expect(bad.status).toBe(400);
  expect(envelope(bad).code).toBe("invalid_request");
});

it("puts a Request-Id on every response and leaks no stack trace or SQL", async () => {
  const ok = await req(passports(), { key: t.testKey });
  expect(ok.status).toBe(200);
  expect(seen.length).toBeGreaterThan(8);
  for (const res of seen) {
    expect(res.headers.get("request-id")).toMatch(/^req_[0-9a-f]{24}$/);
    expect(res.text).not.toMatch(/\n\s+at |node_modules|\.ts:\d+|select |insert into|violates/i);
  }
});

/** The request is refused with this status and code, and the tenant's stored rows did not change. */
async function refusedStoringNothing(
  path: string,
  o: Parameters<Harness["request"]>[1],
  status: number,
  code: string,
) {
  const before = await store.snapshot(t.organizationId);
  const res = await req(path, o);
  expect({ status: res.status, code: envelope(res).code }).toEqual({ status, code });
  expect((await store.snapshot(t.organizationId)).rows).toBe(before.rows);
  return envelope(res);
}

/** One HTTP/1.1 exchange written byte for byte (what Node's parser sees); resolves with status, headers, body. */
function rawExchange(text: string) {
  const { port, hostname } = new URL(h.stack.baseUrl);
  return new Promise<{ status: number; headers: Record<string, string>; body: string }>((resolve, reject) => {
    const socket = net.connect(Number(port), hostname, () => socket.write(text));
    const chunks: Buffer[] = [];
    const done = () => {
      const [head, ...rest] = Buffer.concat(chunks).toString("utf8").split("\r\n\r\n");
      const [statusLine, ...lines] = head!.split("\r\n");
      const headers = Object.fromEntries(
        lines.map((l) => [l.slice(0, l.indexOf(":")).toLowerCase(), l.slice(l.indexOf(":") + 1).trim()]),
      );
      resolve({ status: Number(statusLine!.split(" ")[1]), headers, body: rest.join("\r\n") });
    };
    socket.on("data", (c) => chunks.push(c));
    socket.on("end", done);
    socket.on("error", reject);
  });
}

describe("input hygiene at the edge", () => {
  let passportId: string;
  beforeAll(async () => {
    const res = await h.request(passports(), {
      key: t.testKey,
      body: { category: "textile", data: { product_name: "Shirt", gtin: "4006381333931" } },
    });
    expect(res.status).toBe(201);
    passportId = res.body.id;
  });

  it("refuses NUL and unpaired surrogates in body strings, external_id and PATCH bodies with 422 at the pointer", async () => {
    const cases: [string, string, string, string][] = [
      [
        "POST",
        passports(),
        '{"category":"textile","data":{"product_name":"a\\u0000b"}}',
        "/data/product_name",
      ],
      ["POST", passports(), '{"category":"textile","external_id":"x\\u0000"}', "/external_id"],
      ["POST", passports(), '{"category":"textile","external_id":"\\ud800"}', "/external_id"],
      ["PATCH", `${passports()}/${passportId}`, '{"data":{"product_name":"\\udc00"}}', "/data/product_name"],
      ["PATCH", `${passports()}/${passportId}`, '{"external_id":"\\u0000"}', "/external_id"],
      [
        "POST",
        `/organizations/${t.organizationId}/grants`,
        '{"key_id":"key_\\u0000","scopes":[]}',
        "/key_id",
      ],
    ];
    for (const [method, path, raw, pointer] of cases) {
      const e = await refusedStoringNothing(
        path,
        { key: t.testKey, method, raw, headers: { "content-type": "application/json" } },
        422,
        "validation_failed",
      );
      expect(e.details.issues).toEqual([
        {
          source: { pointer },
          rule: expect.stringMatching(/^(nul_character|lone_surrogate)$/),
          message: expect.any(String),
        },
      ]);
    }
  });

  it("refuses NUL in path ids and grant key ids, and invalid UTF-8 in paths and queries, with 400", async () => {
    for (const [method, path] of [
      ["GET", `${passports()}/pp%00`],
      ["PATCH", `${passports()}/pp%00`],
      ["DELETE", `/organizations/${t.organizationId}/grants/key%00`],
      ["GET", `/organizations/${t.organizationId}%00/passports`],
      ["GET", `${passports()}/%ED%A0%80`],
      ["GET", `${passports()}?category=%00`],
      ["GET", `${passports()}?category=%FF`],
    ]) {
      const e = await refusedStoringNothing(
        path!,
        { key: t.testKey, method, body: method === "PATCH" ? {} : undefined },
        400,
        "invalid_request",
      );
      expect(e.message).not.toMatch(/internal/i);
    }
  });

  it("refuses a query parameter the operation does not read (status[], type[], a misspelt filter) instead of answering unfiltered", async () => {
    // A draft exists: an unfiltered list would hold it, a list of published passports does not.
    const published = await req(`${passports()}?status=published`, { key: t.testKey });
    expect(published.status).toBe(200);
    expect(published.body.data.filter((p: { status: string }) => p.status !== "published")).toEqual([]);
    expect((await req(passports(), { key: t.testKey })).body.data.length).toBeGreaterThan(0);

    for (const [path, parameter] of [
      [`${passports()}?status[]=published`, "status[]"],
      [`${passports()}?status%5Bx%5D=published`, "status[x]"],
      [`${passports()}?statuss=published`, "statuss"],
      [`/organizations/${t.organizationId}/events?type[]=passport.published`, "type[]"],
    ] as const) {
      const res = await req(path, { key: t.testKey });
      expect({ status: res.status, code: envelope(res).code }).toEqual({
        status: 400,
        code: "invalid_request",
      });
      expect(envelope(res).details.issues).toEqual([
        { source: { parameter }, rule: "unknown_parameter", message: expect.any(String) },
      ]);
    }
    // A write with a parameter it does not read is refused and stores nothing.
    await refusedStoringNothing(
      `${passports()}?dry_run=true`,
      { key: t.testKey, body: { category: "general" } },
      400,
      "invalid_request",
    );
  });

  it("refuses invalid UTF-8 in a body with 400 instead of storing U+FFFD", async () => {
    const raw = Buffer.concat([
      Buffer.from('{"category":"textile","external_id":"SKU-'),
      Buffer.from([0xc3, 0x28]),
      Buffer.from('"}'),
    ]);
    const e = await refusedStoringNothing(
      passports(),
      { key: t.testKey, method: "POST", raw, headers: { "content-type": "application/json" } },
      400,
      "invalid_request",
    );
    expect(e.details.issues).toEqual([{ source: { pointer: "" }, rule: "utf8" }]);
  });

  it("refuses JSON nested 10,000 levels deep (20 KB) with 400 and keeps answering", async () => {
    const raw = '{"category":"textile","data":{"x":' + "[".repeat(10_000) + "]".repeat(10_000) + "}}";
    expect(raw.length).toBeGreaterThan(20_000);
    const e = await refusedStoringNothing(
      passports(),
      { key: t.testKey, method: "POST", raw, headers: { "content-type": "application/json" } },
      400,
      "invalid_request",
    );
    expect(e.details.issues[0]).toMatchObject({ rule: "max_depth" });
    expect((await req(passports(), { key: t.testKey })).status).toBe(200);
  });

  it("refuses duplicate JSON member names with 400, category included", async () => {
    const e = await refusedStoringNothing(
      passports(),
      {
        key: t.testKey,
        method: "POST",
        raw: '{"category":"battery","category":"textile"}',
        headers: { "content-type": "application/json" },
      },
      400,
      "invalid_request",
    );
    expect(e.details.issues).toEqual([{ source: { pointer: "/category" }, rule: "duplicate_member" }]);
  });

  it('refuses PATCH {"data": null} with 422 and keeps the passport whole, GTIN included', async () => {
    await refusedStoringNothing(
      `${passports()}/${passportId}`,
      { key: t.testKey, method: "PATCH", body: { data: null } },
      422,
      "validation_failed",
    );
    const after = await req(`${passports()}/${passportId}`, { key: t.testKey });
    expect(after.body).toMatchObject({ gtin: "04006381333931", data: { product_name: "Shirt" } });
    // Clearing is done key by key.
    const cleared = await req(`${passports()}/${passportId}`, {
      key: t.testKey,
      method: "PATCH",
      body: { data: { gtin: null } },
    });
    expect(cleared.status).toBe(200);
    expect(cleared.body).toMatchObject({ gtin: null, data: { product_name: "Shirt" } });
  });

  it("counts external_id in Unicode code points: 128 emoji are accepted, 256 refused", async () => {
    const ok = await req(passports(), {
      key: t.testKey,
      body: { category: "general", external_id: "😀".repeat(128) },
    });
    expect(ok.status).toBe(201);
    expect(ok.body.external_id).toBe("😀".repeat(128));
    const e = await refusedStoringNothing(
      passports(),
      { key: t.testKey, body: { category: "general", external_id: "😀".repeat(256) } },
      422,
      "validation_failed",
    );
    expect(e.details.issues).toEqual([
      expect.objectContaining({ source: { pointer: "/external_id" }, rule: "length" }),
    ]);
  });

  it("refuses Authorization sent twice with 400 instead of taking the first", async () => {
    const res = await rawExchange(
      `GET /v1/whoami HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${t.testKey}\r\nAuthorization: Bearer ${t.liveKey}\r\nConnection: close\r\n\r\n`,
    );
    expect(res.status).toBe(400);
    expect(JSON.parse(res.body).error).toMatchObject({
      code: "invalid_request",
      request_id: res.headers["request-id"],
      details: { issues: [{ source: { header: "Authorization" }, rule: "single_value" }] },
    });
  });

  it("answers Node's own refusals (oversized headers, a bad request line) with the envelope", async () => {
    const big = await rawExchange(
      `GET /v1/categories HTTP/1.1\r\nHost: x\r\nX-Filler: ${"a".repeat(20_000)}\r\n\r\n`,
    );
    expect(big.status).toBe(400);
    expect(JSON.parse(big.body).error).toMatchObject({
      code: "invalid_request",
      request_id: big.headers["request-id"],
      details: { reason: "headers_too_large" },
    });
    const line = await rawExchange("GET /v1/categories HTTP/9\r\n\r\n");
    expect(line.status).toBe(400);
    expect(line.headers["content-type"]).toMatch(/^application\/json/);
    expect(JSON.parse(line.body).error).toMatchObject({
      code: "invalid_request",
      details: { reason: "malformed_request" },
    });
  });
});

it("emits an event for each accepted write and none for a refusal", async () => {
  // Every accepted change moves a passport's version by one and emits one event; refusals move nothing.
  const expected = async () =>
    Number(
      (
        await sql<{
          n: number;
        }>`select coalesce(sum(version), 0)::int as n from passport.passport where organization_id = ${t.organizationId}`.execute(
          h.gatewayDb,
        )
      ).rows[0]!.n,
    );
  const want = await expected();
  expect(want).toBeGreaterThan(0);
  let feed = -1;
  for (const until = Date.now() + 15_000; Date.now() < until; await new Promise((r) => setTimeout(r, 200))) {
    feed = (await store.snapshot(t.organizationId)).feed;
    if (feed >= want) break;
  }
  expect(feed).toBe(want);
});

describe("response headers", () => {
  it("sends nosniff, a CSP and no X-Powered-By everywhere, and never lets an authenticated answer be cached", async () => {
    for (const res of [
      await req(passports(), { key: t.testKey }),
      await req("/whoami", { key: t.testKey }),
      await req("/categories"),
      await req(passports(), { key: "nope" }),
    ]) {
      expect(res.headers.get("x-powered-by")).toBeNull();
      expect(res.headers.get("x-content-type-options")).toBe("nosniff");
      expect(res.headers.get("content-security-policy")).toContain("default-src 'none'");
      expect(res.headers.get("cache-control")).toBe("no-store");
    }
  });

  it("caches /docs and /v1/openapi.json with an ETag and answers 304 to If-None-Match; /docs has a strict CSP", async () => {
    const origin = new URL(h.stack.baseUrl).origin;
    for (const url of [`${origin}/docs`, `${h.stack.baseUrl}/openapi.json`]) {
      const first = await fetch(url);
      expect(first.status).toBe(200);
      await first.arrayBuffer();
      const etag = first.headers.get("etag")!;
      expect(etag).toMatch(/^".+"$/);
      expect(first.headers.get("cache-control")).toBe("public, max-age=300");
      expect(first.headers.get("x-content-type-options")).toBe("nosniff");
      const again = await fetch(url, { headers: { "if-none-match": etag } });
      expect(again.status).toBe(304);
      expect(await again.text()).toBe("");
    }
    const docs = await fetch(`${origin}/docs`);
    await docs.arrayBuffer();
    const csp = docs.headers.get("content-security-policy")!;
    expect(csp).toMatch(/script-src 'sha256-/);
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toMatch(/unsafe-eval|script-src[^;]*unsafe-inline/);
  });
});

describe("compressed answers", () => {
  /** One GET with node:http, which decodes nothing: the bytes as sent. */
  const raw = (url: string, headers: Record<string, string> = {}) =>
    new Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer }>((resolve, reject) => {
      http
        .get(url, { headers }, (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (c: Buffer) => chunks.push(c));
          res.on("end", () =>
            resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }),
          );
        })
        .on("error", reject);
    });

  it("compresses a JSON answer over 1 KiB for a client that accepts it; decoded it is the same answer", async () => {
    const created = await req(passports(), {
      key: t.testKey,
      body: {
        category: "textile",
        data: { product_name: "Shirt", product_description: "Knitted and sewn in Portugal. ".repeat(40) },
      },
    });
    h.expectStatus(created, 201);
    const path = `${passports()}/${created.body.id}`;
    const plain = await req(path, { key: t.testKey, headers: { "accept-encoding": "identity" } });
    expect(plain.headers.get("content-encoding")).toBeNull();
    expect(Buffer.byteLength(plain.text)).toBeGreaterThan(1024);
    for (const encoding of ["br", "gzip"]) {
      // fetch decodes the body; the contract check of req() reads the decoded answer.
      const res = await req(path, { key: t.testKey, headers: { "accept-encoding": encoding } });
      expect([res.status, res.headers.get("content-encoding"), res.headers.get("vary")]).toEqual([
        200,
        encoding,
        "Accept-Encoding",
      ]);
      expect(Number(res.headers.get("content-length"))).toBeLessThan(Buffer.byteLength(plain.text) / 2);
      expect(res.body).toEqual(plain.body);
    }
    // A small answer is sent as it is.
    const small = await req("/whoami", { key: t.testKey, headers: { "accept-encoding": "br" } });
    expect([small.status, small.headers.get("content-encoding")]).toEqual([200, null]);
  });

  it("serves /docs with brotli to a fifth of its size, decoding to the same page", async () => {
    const url = `${new URL(h.stack.baseUrl).origin}/docs`;
    const plain = await raw(url);
    expect([plain.status, plain.headers["content-encoding"]]).toEqual([200, undefined]);
    expect(plain.body.length).toBeGreaterThan(2_000_000);
    const br = await raw(url, { "accept-encoding": "br" });
    expect([br.status, br.headers["content-encoding"], br.headers.vary]).toEqual([
      200,
      "br",
      "Accept-Encoding",
    ]);
    // The page grows with the API (about 600 kB compressed with every service of v1); the ratio below is the check.
    expect(br.body.length).toBeLessThan(900_000);
    expect(br.body.length).toBeLessThan(plain.body.length / 4);
    expect(zlib.brotliDecompressSync(br.body).equals(plain.body)).toBe(true);
  });

  // Last in this file: it uses up the address's anonymous budget.
  it("counts /docs against the address's anonymous limit: 60 per minute, then 429 with Retry-After", async () => {
    const url = `${new URL(h.stack.baseUrl).origin}/docs`;
    let first = await raw(url, { "accept-encoding": "br" });
    const remaining = (res: typeof first) =>
      Number(/^"anonymous";r=(\d+);t=(\d+)$/.exec(String(res.headers.ratelimit))![1]);
    const resetIn = (res: typeof first) =>
      Number(/^"anonymous";r=(\d+);t=(\d+)$/.exec(String(res.headers.ratelimit))![2]);
    // Near the end of a window, start in the next one rather than race it.
    if (resetIn(first) < 10) {
      await new Promise((r) => setTimeout(r, (resetIn(first) + 1) * 1000));
      first = await raw(url, { "accept-encoding": "br" });
    }
    expect(first.status).toBe(200);
    expect(first.headers["ratelimit-policy"]).toBe('"anonymous";q=60;w=60');
    for (let left = remaining(first); left > 0; left--) {
      const res = await raw(url, { "accept-encoding": "br" });
      expect([res.status, remaining(res)]).toEqual([200, left - 1]);
    }
    const over = await raw(url, { "accept-encoding": "br" });
    expect(over.status).toBe(429);
    expect(Number(over.headers["retry-after"])).toBeGreaterThan(0);
    expect(JSON.parse(over.body.toString("utf8")).error).toMatchObject({
      code: "rate_limited",
      details: { policy: "anonymous", limit: 60, window_seconds: 60 },
    });
    // The API description is counted in the same budget.
    expect((await raw(`${h.stack.baseUrl}/openapi.json`)).status).toBe(429);
  });
});
