/** Request hygiene: media types, methods, sizes, malformed JSON, unknown paths, request ids, no leaks. */
import { envelope, startHarness, type ApiResponse, type Harness, type Tenant } from "./support/harness";

let h: Harness;
let t: Tenant;
const seen: ApiResponse[] = [];

beforeAll(async () => {
  h = await startHarness("e2e_hygiene");
  t = await h.tenant("Hygiene Brand");
});
afterAll(() => h?.close());

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
