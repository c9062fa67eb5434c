/**
 * The SDK's own behaviour against a small local HTTP server that answers what each test scripts
 * (the whole stack is exercised by the e2e suite, test-e2e/sdk.e2e.test.ts): retries and their
 * Idempotency-Keys, typed errors, iterators, timeouts, headers.
 */
import { getEventListeners } from "node:events";
import http from "node:http";
import type { AddressInfo } from "node:net";
import {
  Dpp,
  DppConnectionError,
  DppError,
  isCategory,
  isDppError,
  type Event,
  type Passport,
  type RetryEvent,
} from "../src";

interface Seen {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: unknown;
}
interface Scripted {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
  /** Never answer (the client's timeout runs out). */
  hang?: boolean;
}

let server: http.Server;
let base = "";
let script: Scripted[] = [];
let seen: Seen[] = [];
let counter = 0;

beforeAll(async () => {
  server = http.createServer((req, res) => {
    let text = "";
    req.on("data", (c) => (text += c));
    req.on("end", () => {
      seen.push({
        method: req.method!,
        url: req.url!,
        headers: req.headers,
        body: text ? JSON.parse(text) : undefined,
      });
      const next = script.shift() ?? { status: 500, body: envelope("internal_error", 500) };
      if (next.hang) return;
      const id = `req_${(++counter).toString(16).padStart(24, "0")}`;
      res.writeHead(next.status, { "content-type": "application/json", "request-id": id, ...next.headers });
      res.end(next.body === undefined ? "" : JSON.stringify(next.body));
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});
beforeEach(() => {
  script = [];
  seen = [];
});

function envelope(code: string, _status: number, details: Record<string, unknown> = {}) {
  return {
    error: {
      code,
      message: `refused: ${code}`,
      documentation_url: `https://docs.dpp.example/errors#${code}`,
      request_id: "req_000000000000000000000abc",
      details,
    },
  };
}

function passport(over: Partial<Record<string, unknown>> = {}) {
  return {
    object: "passport",
    id: "pp_1",
    name: "organizations/org_1/passports/pp_1",
    organization_id: "org_1",
    category: "textile",
    status: "draft",
    gtin: null,
    serial_number: null,
    external_id: null,
    version: 1,
    livemode: false,
    registry_id: null,
    created_at: "2026-08-01T12:00:00.000Z",
    updated_at: "2026-08-01T12:00:00.000Z",
    published_at: null,
    trashed_at: null,
    data: { product_name: "Shirt" },
    ...over,
  };
}

const client = (o: Partial<ConstructorParameters<typeof Dpp>[0]> = {}) =>
  new Dpp({ apiKey: "dpp_sk_test_x", baseUrl: base, retryDelayMs: 1, ...o });
const keys = () => seen.map((s) => s.headers["idempotency-key"]);

describe("retries", () => {
  it("retries a create through 429 and 409 resource_busy under the same Idempotency-Key", async () => {
    script = [
      { status: 429, body: envelope("rate_limited", 429), headers: { "retry-after": "0" } },
      { status: 409, body: envelope("resource_busy", 409), headers: { "retry-after": "0" } },
      { status: 201, body: passport(), headers: { "idempotent-replayed": "true" } },
    ];
    const retries: RetryEvent[] = [];
    const org = client({ onRetry: (e) => retries.push(e) }).organization("org_1");
    const p = await org.passports.create({ category: "textile", data: { product_name: "Shirt" } });

    expect(seen.map((s) => `${s.method} ${s.url}`)).toEqual(
      Array(3).fill("POST /v1/organizations/org_1/passports"),
    );
    expect(keys()[0]).toMatch(/^dpp-client-[0-9a-f-]{36}$/);
    expect(new Set(keys()).size).toBe(1);
    expect(seen.every((s) => JSON.stringify(s.body) === JSON.stringify(seen[0]!.body))).toBe(true);
    expect(retries.map((r) => [r.reason, r.status, r.newIdempotencyKey])).toEqual([
      ["rate_limited", 429, false],
      ["resource_busy", 409, false],
    ]);
    // The answer is typed by its category: data.product_name is a string here.
    const name: string | undefined = p.data.product_name;
    expect(name).toBe("Shirt");
    expect(p.lastResponse).toMatchObject({
      status: 201,
      attempts: 3,
      replayed: true,
      idempotencyKey: keys()[0],
    });
    expect(p.lastResponse.requestId).toMatch(/^req_/);
    expect(Object.keys(p)).not.toContain("lastResponse");
  });

  it("leaves no listener on the caller's signal after the waits between its retries", async () => {
    const outage = {
      status: 500,
      body: envelope("internal_error", 500, { reason: "upstream_timeout", service: "passport" }),
    };
    script = [outage, outage, outage, { status: 201, body: passport() }];
    // One signal for the life of an integration (a worker's shutdown signal), given to every call.
    const shutdown = new AbortController();
    const p = await client()
      .organization("org_1")
      .passports.create(
        { category: "textile", data: { product_name: "Shirt" } },
        { signal: shutdown.signal },
      );
    expect(p.lastResponse.attempts).toBe(4);
    expect(getEventListeners(shutdown.signal, "abort")).toHaveLength(0);
  });

  it("retries a recorded 5xx under a new key, and an upstream outage under the same one", async () => {
    script = [
      { status: 503, body: envelope("storage_unavailable", 503), headers: { "retry-after": "0" } },
      {
        status: 500,
        body: envelope("internal_error", 500, { reason: "upstream_timeout", service: "passport" }),
        headers: { "retry-after": "0" },
      },
      { status: 200, body: { ...passport({ status: "published" }), warnings: [] } },
    ];
    const p = await client().organization("org_1").passports.publish("pp_1");
    expect(p.status).toBe("published");
    const [first, second, third] = keys();
    expect(second).not.toBe(first);
    expect(third).toBe(second);
    expect(p.lastResponse.idempotencyKey).toBe(third);
  });

  it("retries an outcome_unknown under the same key, a caller's key included", async () => {
    script = [
      {
        status: 500,
        body: envelope("internal_error", 500, { reason: "outcome_unknown", service: "passport" }),
        headers: { "retry-after": "0" },
      },
      { status: 200, body: { ...passport({ status: "published" }), warnings: [] } },
    ];
    const p = await client()
      .organization("org_1")
      .passports.publish("pp_1", {}, { idempotencyKey: "order-43-publish" });
    expect(p.status).toBe("published");
    expect(keys()).toEqual(["order-43-publish", "order-43-publish"]);
    expect(p.lastResponse.attempts).toBe(2);
  });

  it("keeps a key the caller gave: a recorded 5xx is the answer", async () => {
    script = [{ status: 503, body: envelope("storage_unavailable", 503), headers: { "retry-after": "0" } }];
    const err = await client()
      .organization("org_1")
      .passports.publish("pp_1", {}, { idempotencyKey: "order-42-publish" })
      .catch((e: unknown) => e);
    expect(isDppError(err, "storage_unavailable")).toBe(true);
    expect(keys()).toEqual(["order-42-publish"]);
    expect(err).toMatchObject({
      status: 503,
      retryAfter: 0,
      attempts: 1,
      idempotencyKey: "order-42-publish",
    });
  });

  it("does not retry a portal_unavailable, a Retry-After over the limit, or a refusal", async () => {
    script = [
      { status: 502, body: envelope("portal_unavailable", 502) },
      { status: 429, body: envelope("rate_limited", 429), headers: { "retry-after": "120" } },
      { status: 409, body: envelope("already_exists", 409, { passport_id: "pp_0" }) },
    ];
    const org = client().organization("org_1");
    for (const code of ["portal_unavailable", "rate_limited", "already_exists"]) {
      const err = await org.passports.create({ category: "general" }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(DppError);
      expect((err as DppError).code).toBe(code);
      expect((err as DppError).attempts).toBe(1);
    }
    expect(seen).toHaveLength(3);
  });

  it("gives up after maxRetries and surfaces the last answer", async () => {
    script = Array.from({ length: 3 }, () => ({
      status: 409,
      body: envelope("resource_busy", 409),
      headers: { "retry-after": "0" },
    }));
    const err = await client({ maxRetries: 2 })
      .organization("org_1")
      .passports.create({ category: "textile" })
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ code: "resource_busy", attempts: 3 });
    expect(seen).toHaveLength(3);
  });

  it("retries a request that timed out under the same key, then reports the timeout", async () => {
    script = [
      { status: 0, hang: true },
      { status: 201, body: passport({ category: "general", data: {} }) },
    ];
    const org = client({ timeoutMs: 200 }).organization("org_1");
    const p = await org.passports.create({ category: "general" });
    expect(p.category).toBe("general");
    expect(keys()).toHaveLength(2);
    expect(keys()[1]).toBe(keys()[0]);

    script = [
      { status: 0, hang: true },
      { status: 0, hang: true },
    ];
    const err = await client({ timeoutMs: 200, maxRetries: 1 })
      .organization("org_1")
      .passports.get("pp_1")
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DppConnectionError);
    expect(err).toMatchObject({ timedOut: true, attempts: 2, idempotencyKey: undefined });
  });
});

describe("typed errors", () => {
  it("throws the refusal with its code, details and request_id", async () => {
    script = [{ status: 412, body: envelope("precondition_failed", 412, { current_version: 3 }) }];
    const org = client().organization("org_1");
    try {
      await org.passports.update("pp_1", { data: { product_name: "New" } }, { expectedVersion: 2 });
      throw new Error("expected a refusal");
    } catch (err) {
      if (!isDppError(err, "precondition_failed")) throw err;
      expect(err.code).toBe("precondition_failed");
      expect(err.details.current_version).toBe(3);
      expect(err.requestId).toBe("req_000000000000000000000abc");
      expect(err.status).toBe(412);
    }
    expect(seen[0]!.headers["expected-version"]).toBe("2");
    expect(seen[0]!.headers["if-match"]).toBeUndefined();
    expect(seen[0]!.headers["idempotency-key"]).toMatch(/^dpp-client-/);
  });

  it("throws human_approval_required (a 202) as a refusal", async () => {
    script = [{ status: 202, body: envelope("human_approval_required", 202, { review_url: "https://x" }) }];
    const err = await client()
      .organization("org_1")
      .passports.publish("pp_1")
      .catch((e: unknown) => e);
    expect(err).toMatchObject({
      code: "human_approval_required",
      status: 202,
      details: { review_url: "https://x" },
    });
  });

  it("sends no Idempotency-Key on a read, and the key as a bearer credential", async () => {
    script = [{ status: 200, body: passport() }];
    await client().organization("org_1").passports.get("pp_1");
    expect(seen[0]!.headers["idempotency-key"]).toBeUndefined();
    expect(seen[0]!.headers.authorization).toBe("Bearer dpp_sk_test_x");
    expect(seen[0]!.headers["user-agent"]).toMatch(/^dpp-client-ts\//);
  });
});

describe("iterators and open categories", () => {
  const event = (i: number): Event => ({
    object: "event",
    id: `ev_${i}`,
    name: `organizations/org_1/events/ev_${i}`,
    organization_id: "org_1",
    type: "passport.created",
    livemode: false,
    created_at: "2026-08-01T12:00:00.000Z",
    related: {
      object: "passport",
      id: `pp_${i}`,
      name: `organizations/org_1/passports/pp_${i}`,
      category: "textile",
      status: "draft",
      previous_status: null,
      version: 1,
    },
  });

  it("reads the event feed to its end, page by page, and keeps the cursor to read on", async () => {
    script = [
      {
        status: 200,
        body: { object: "list", data: [event(1), event(2)], has_more: true, next_cursor: "c2" },
      },
      { status: 200, body: { object: "list", data: [event(3)], has_more: false, next_cursor: "c3" } },
    ];
    const feed = client()
      .organization("org_1")
      .events.list({ type: ["passport.created"], limit: 2 });
    const ids: string[] = [];
    for await (const e of feed) ids.push(e.id);
    expect(ids).toEqual(["ev_1", "ev_2", "ev_3"]);
    expect(feed.cursor).toBe("c3");
    expect(seen.map((s) => s.url)).toEqual([
      "/v1/organizations/org_1/events?type=passport.created&limit=2",
      "/v1/organizations/org_1/events?type=passport.created&limit=2&cursor=c2",
    ]);

    script = [{ status: 200, body: { object: "list", data: [], has_more: false, next_cursor: "c3" } }];
    const later = await client().organization("org_1").events.list({ cursor: feed.cursor! }).toArray();
    expect(later).toEqual([]);
    expect(seen.at(-1)!.url).toBe("/v1/organizations/org_1/events?cursor=c3");
  });

  it("decodes a passport of a category it does not know, and narrows the ones it knows", async () => {
    script = [
      {
        status: 200,
        body: {
          object: "list",
          data: [passport(), passport({ id: "pp_2", category: "furniture", data: { seat_height: 45 } })],
          has_more: false,
          next_cursor: null,
        },
      },
    ];
    const all: Passport[] = await client().organization("org_1").passports.list().toArray();
    expect(all.map((p) => p.category)).toEqual(["textile", "furniture"]);
    const textile = all.filter((p) => isCategory(p, "textile"));
    const names: (string | undefined)[] = textile.map((p) => p.data.product_name);
    expect(names).toEqual(["Shirt"]);
    expect(all[1]!.data).toEqual({ seat_height: 45 });
  });
});
