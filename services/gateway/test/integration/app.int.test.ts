/**
 * The HTTP app: routing, authentication with the real Authenticator and store,
 * JSON mapping, the error envelope, body hygiene, query parameters and probes.
 *
 * The passport and events services are FAKED here (plain objects with the few
 * methods the handlers call): they are tested on their own in their packages,
 * and the whole stack end to end in test-e2e/. This file tests the gateway alone.
 */
import type { AddressInfo } from "node:net";
import type { Server } from "node:http";
import { sql } from "kysely";
import { ApiError } from "@dpp/contract";
import { invalidParameter, validationFailed } from "@dpp/contract";
import { createLogger, type CallOptions, type RequestContext } from "@dpp/kit";
import { fromServiceError, toServiceError } from "@dpp/kit/internal";
import { passportV1, timestampFromDate, type eventsV1 } from "@dpp/proto";
import { Authenticator } from "../../src/modules/identity/authenticator";
import { createApp } from "../../src/http/app";
import { fakeModuleDeps, gatewayModules, type ModuleDeps } from "../../src/modules";
import { allowedMethods, MiB, routeTable, ROUTES } from "../../src/routes";
import { startStore, type Store, httpRequest, type HttpRequestOptions, type HttpResponse } from "../harness";

const DOCS = "https://docs.test/errors";

// ---- the fakes -----------------------------------------------------------------------------------

const at = (text: string) => timestampFromDate(new Date(text));

function passportMessage(over: Partial<passportV1.Passport> = {}): passportV1.Passport {
  return {
    $typeName: "dpp.passport.v1.Passport",
    id: "pp_1",
    organizationId: "org_x",
    category: "textile",
    status: passportV1.PassportStatus.DRAFT,
    version: 1,
    livemode: false,
    createdAt: at("2026-01-02T03:04:05.678Z"),
    updatedAt: at("2026-01-02T03:04:05.678Z"),
    dataJson: "{}",
    ...over,
  };
}

function eventMessage(over: Partial<eventsV1.Event> = {}): eventsV1.Event {
  return {
    $typeName: "dpp.events.v1.Event",
    id: "evt_1",
    organizationId: "org_x",
    type: "passport.created",
    livemode: false,
    createdAt: at("2026-01-02T03:04:05.678Z"),
    relatedJson: JSON.stringify({ object: "passport", id: "pp_1" }),
    ...over,
  };
}

/** A service error as the gateway receives it: packed into the gRPC trailer and decoded again. */
function viaGrpc(err: ApiError): ApiError {
  return fromServiceError(toServiceError(err) as Parameters<typeof fromServiceError>[0], "passport");
}

interface Call {
  method: string;
  req: unknown;
  ctx: RequestContext;
}

const calls: Call[] = [];
/** What the next call of a method answers (a value, or an error to throw); reset after each test. */
const answers = new Map<string, () => unknown>();

function fake<T>(methods: string[]): T {
  const out: Record<string, (req: unknown, opts: CallOptions) => Promise<unknown>> = {};
  for (const method of methods)
    out[method] = async (req, opts) => {
      calls.push({ method, req, ctx: opts.context });
      const answer = answers.get(method);
      if (!answer) throw new Error(`the fake has no answer for ${method}`);
      return answer();
    };
  return { ...out, close: () => undefined } as T;
}

const passport = fake<ModuleDeps["passport"]>([
  "listCategories",
  "getCategorySchema",
  "createPassport",
  "getPassport",
  "listPassports",
  "publishPassport",
  "updatePassport",
]);
const events = fake<ModuleDeps["events"]>(["listEvents"]);

// ---- the app ---------------------------------------------------------------------------------------

let s: Store;
let server: Server;
let base: string;
let org: { id: string };
let keys: { test: string; live: string; readOnly: string; revoked: string; testId: string };

async function listen(ready: () => Promise<void>): Promise<{ server: Server; base: string }> {
  const app = createApp({
    authenticator: new Authenticator(s.identity),
    routes: routeTable(gatewayModules(fakeModuleDeps({ passport, events, identity: s.identity }))),
    log: createLogger("gateway-test", "silent"),
    docsBaseUrl: DOCS,
    trustProxy: 0,
    ready,
  });
  const srv = await new Promise<Server>((resolve) => {
    const x = app.listen(0, "127.0.0.1", () => resolve(x));
  });
  return { server: srv, base: `http://127.0.0.1:${(srv.address() as AddressInfo).port}` };
}

const close = (srv: Server) =>
  new Promise<void>((resolve) => {
    srv.close(() => resolve());
    srv.closeAllConnections();
  });

beforeAll(async () => {
  s = await startStore("gw_app");
  org = await s.admin.createOrganization("Acme", "pro", "active");
  const test = await s.admin.createKey({ organizationId: org.id, livemode: false });
  const live = await s.admin.createKey({ organizationId: org.id, livemode: true });
  const readOnly = await s.admin.createKey({
    organizationId: org.id,
    livemode: false,
    scopes: ["passports:read"],
  });
  const revoked = await s.admin.createKey({ organizationId: org.id, livemode: false });
  await s.admin.revokeKey(revoked.record.id);
  keys = {
    test: test.key,
    live: live.key,
    readOnly: readOnly.key,
    revoked: revoked.key,
    testId: test.record.id,
  };
  ({ server, base } = await listen(async () => {
    await sql`select 1`.execute(s.sql);
  }));
});
afterAll(async () => {
  if (server) await close(server);
  await s?.close();
});
afterEach(() => {
  calls.length = 0;
  answers.clear();
});

type Res = HttpResponse;

const request = (path: string, o: HttpRequestOptions & { base?: string } = {}): Promise<Res> =>
  httpRequest(o.base ?? base, path, o);

/** The response is the spec's error envelope with this code, and its request_id is the Request-Id header. */
function expectEnvelope(res: Res, status: number, code: string) {
  expect(res.status).toBe(status);
  expect(Object.keys(res.body)).toEqual(["error"]);
  expect(res.body.error).toMatchObject({ code, documentation_url: `${DOCS}#${code}` });
  expect(typeof res.body.error.message).toBe("string");
  expect(res.body.error.request_id).toBe(res.headers.get("request-id"));
  expect(typeof res.body.error.details).toBe("object");
  return res.body.error as { code: string; message: string; details: any };
}

const passports = () => `/v1/organizations/${org.id}/passports`;

// ---- tests -----------------------------------------------------------------------------------------

describe("passport JSON", () => {
  it("maps a passport message to the spec's snake_case shape, with nulls and the resource name", async () => {
    answers.set("getPassport", () => ({
      passport: passportMessage({
        id: "pp_abc",
        organizationId: org.id,
        gtin: "04006381333931",
        externalId: "SKU-1",
        version: 3,
        publishedAt: at("2026-02-01T00:00:00Z"),
        dataJson: JSON.stringify({
          product_name: "Shirt",
          material_composition: [{ fiber: "cotton", percentage: 100 }],
        }),
      }),
    }));
    const res = await request(`${passports()}/pp_abc`, { key: keys.test });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^application\/json/);
    expect(res.body).toEqual({
      object: "passport",
      id: "pp_abc",
      name: `organizations/${org.id}/passports/pp_abc`,
      organization_id: org.id,
      category: "textile",
      status: "draft",
      gtin: "04006381333931",
      serial_number: null,
      external_id: "SKU-1",
      version: 3,
      livemode: false,
      registry_id: null,
      created_at: "2026-01-02T03:04:05.678Z",
      updated_at: "2026-01-02T03:04:05.678Z",
      published_at: "2026-02-01T00:00:00.000Z",
      trashed_at: null,
      data: { product_name: "Shirt", material_composition: [{ fiber: "cotton", percentage: 100 }] },
    });
    expect(calls).toHaveLength(1);
    expect(calls[0]!.req).toEqual({ id: "pp_abc" });
  });

  it("passes the request context the gateway established to the service", async () => {
    answers.set("getPassport", () => ({
      passport: passportMessage({ organizationId: org.id, livemode: true }),
    }));
    const res = await request(`${passports()}/pp_1`, { key: keys.live });
    expect(res.status).toBe(200);
    const ctx = calls[0]!.ctx;
    expect(ctx).toMatchObject({
      requestId: res.headers.get("request-id"),
      organizationId: org.id,
      livemode: true,
      credentialKind: "secret",
      plan: { planId: "pro", subscriptionStatus: "active" },
    });
    expect(ctx.keyId).toMatch(/^key_/);
    expect(ctx.keyId).not.toBe(keys.testId);
  });

  it("creates with 201 and hands the body's members to the service as fields, data as JSON text", async () => {
    answers.set("createPassport", () => ({ passport: passportMessage({ organizationId: org.id }) }));
    const body = { category: "textile", external_id: "A", data: { product_name: "x", note: null } };
    const res = await request(passports(), { key: keys.test, body });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      object: "passport",
      name: `organizations/${org.id}/passports/pp_1`,
      gtin: null,
    });
    expect(calls[0]!.req).toEqual({
      category: "textile",
      externalId: "A",
      dataJson: JSON.stringify(body.data),
    });
    // null members are absent members.
    await request(passports(), {
      key: keys.test,
      body: { category: "general", external_id: null, data: null },
    });
    expect(calls[1]!.req).toEqual({ category: "general", dataJson: "" });
  });

  it("maps lists, categories and events", async () => {
    answers.set("listPassports", () => ({
      passports: [passportMessage({ id: "pp_2" }), passportMessage({ id: "pp_1" })],
      hasMore: true,
      nextCursor: "next",
    }));
    const list = await request(passports(), { key: keys.test });
    expect(list.body).toMatchObject({ object: "list", has_more: true, next_cursor: "next" });
    expect(list.body.data.map((p: { id: string }) => p.id)).toEqual(["pp_2", "pp_1"]);

    answers.set("listPassports", () => ({ passports: [], hasMore: false, nextCursor: "" }));
    expect((await request(passports(), { key: keys.test })).body).toEqual({
      object: "list",
      data: [],
      has_more: false,
      next_cursor: null,
    });

    answers.set("listEvents", () => ({
      events: [eventMessage({ organizationId: org.id })],
      eventJson: [],
      pageJson: new Uint8Array(0),
      hasMore: false,
      nextCursor: "c",
    }));
    const feed = await request(`/v1/organizations/${org.id}/events`, { key: keys.test });
    expect(feed.body.data).toEqual([
      {
        object: "event",
        id: "evt_1",
        name: `organizations/${org.id}/events/evt_1`,
        organization_id: org.id,
        type: "passport.created",
        livemode: false,
        created_at: "2026-01-02T03:04:05.678Z",
        related: { object: "passport", id: "pp_1" },
      },
    ]);

    answers.set("listCategories", () => ({
      categories: [
        {
          id: "textile",
          displayName: "Textile",
          description: "d",
          schemaVersion: "2026-08-01",
          regulations: ["r"],
        },
      ],
    }));
    const cats = await request("/v1/categories");
    expect(cats.status).toBe(200);
    expect(cats.body.data).toEqual([
      {
        object: "category",
        id: "textile",
        name: "categories/textile",
        display_name: "Textile",
        description: "d",
        schema_version: "2026-08-01",
        regulations: ["r"],
      },
    ]);
    // Anonymous: no key and no tenant in the context.
    expect(calls.at(-1)!.ctx.keyId).toBeUndefined();
    expect(calls.at(-1)!.ctx.organizationId).toBeUndefined();
  });
});

describe("the feed page the events service assembled", () => {
  const feed = () => `/v1/organizations/${org.id}/events`;
  const texts = [
    JSON.stringify({ object: "event", id: "evt_1", related: { name: "Größe \u2028 ✓" } }),
    JSON.stringify({ object: "event", id: "evt_2", related: {} }),
  ];
  const page = Buffer.from(`[${texts.join(",")}]`, "utf8");
  const envelope = `{"object":"list","data":${page.toString("utf8")},"has_more":true,"next_cursor":"c_9"}`;

  it("is answered as its bytes in the list envelope, with their length, the same for GET and HEAD", async () => {
    answers.set("listEvents", () => ({
      events: [],
      eventJson: [],
      pageJson: new Uint8Array(page),
      hasMore: true,
      nextCursor: "c_9",
    }));
    const got = await request(feed(), { key: keys.test });
    expect(got.status).toBe(200);
    expect(got.headers.get("content-type")).toBe("application/json; charset=utf-8");
    expect(got.text).toBe(envelope);
    expect(got.headers.get("content-length")).toBe(String(Buffer.byteLength(envelope)));
    expect(Buffer.byteLength(envelope)).toBeGreaterThan(envelope.length);
    const head = await request(feed(), { key: keys.test, method: "HEAD" });
    expect(head.status).toBe(200);
    expect(head.text).toBe("");
    expect(head.headers.get("content-length")).toBe(String(Buffer.byteLength(envelope)));
  });

  it("is the same answer from a service of the previous release, one text per event", async () => {
    answers.set("listEvents", () => ({
      events: [],
      eventJson: texts,
      pageJson: new Uint8Array(0),
      hasMore: true,
      nextCursor: "c_9",
    }));
    const got = await request(feed(), { key: keys.test });
    expect(got.text).toBe(envelope);
    expect(got.headers.get("content-length")).toBe(String(Buffer.byteLength(envelope)));
  });
});

describe("what a write hands the owning service", () => {
  const created = () => ({ passport: passportMessage({ organizationId: org.id }) });

  it("forwards Expected-Version as the request's expected version, and nothing without the header", async () => {
    answers.set("updatePassport", created);
    const patch = { data: { product_name: "New" } };
    const withHeader = await request(`${passports()}/pp_1`, {
      method: "PATCH",
      key: keys.test,
      body: patch,
      headers: { "expected-version": "7" },
    });
    expect(withHeader.status).toBe(200);
    await request(`${passports()}/pp_1`, { method: "PATCH", key: keys.test, body: patch });
    expect(calls.map((c) => (c.req as { expectedVersion?: number }).expectedVersion)).toEqual([7, undefined]);
  });

  it("scopes an Idempotency-Key with a fingerprint of method, path and body, for the service to record", async () => {
    answers.set("createPassport", created);
    const body = (name: string) => ({ category: "textile", data: { product_name: name } });
    const send = (key: string | undefined, name: string) =>
      request(passports(), {
        key: keys.test,
        body: body(name),
        headers: key === undefined ? {} : { "idempotency-key": key },
      });
    await send("k-1", "A");
    await send("k-1", "A");
    await send("k-1", "B");
    await send(undefined, "A");
    const sent = calls.map((c) => c.ctx.idempotency);
    expect(sent[0]).toEqual({
      key: "k-1",
      fingerprint: expect.stringMatching(/^[0-9a-f]{64}$/),
      callerOrganizationId: org.id,
    });
    expect(sent[1]!.fingerprint).toBe(sent[0]!.fingerprint);
    // Another body under the same key is another request: the service answers idempotency_conflict.
    expect(sent[2]!.fingerprint).not.toBe(sent[0]!.fingerprint);
    expect(sent[3]).toBeUndefined();
  });

  it("fingerprints a patch's body: another patch under the same key differs, the same patch with its members reordered does not", async () => {
    answers.set("updatePassport", created);
    const send = (body: unknown) =>
      request(`${passports()}/pp_1`, {
        method: "PATCH",
        key: keys.test,
        body,
        headers: { "idempotency-key": "k-patch" },
      });
    await send({ external_id: "SKU-1", data: { product_name: "A", product_description: "d" } });
    await send({ data: { product_description: "d", product_name: "A" }, external_id: "SKU-1" });
    await send({ external_id: "SKU-1", data: { product_name: "B", product_description: "d" } });
    await send({ external_id: "SKU-1" });
    const [first, reordered, otherName, noData] = calls.map((c) => c.ctx.idempotency!.fingerprint);
    expect(reordered).toBe(first);
    expect(new Set([first, otherName, noData]).size).toBe(3);
  });

  it("scopes a key used on a client by the calling key's organization, not the client in the path", async () => {
    answers.set("createPassport", created);
    const manager = await s.admin.createOrganization("Agency", "pro", "active");
    await s.admin.linkClient(manager.id, org.id);
    const managerKey = await s.admin.createKey({ organizationId: manager.id, livemode: false });
    await s.admin.grantChecked(managerKey.record.id, org.id, ["passports:write"]);
    for (const key of [managerKey.key, keys.test])
      expect(
        (
          await request(passports(), {
            key,
            body: { category: "textile" },
            headers: { "idempotency-key": "k-shared" },
          })
        ).status,
      ).toBe(201);
    expect(calls.map((c) => [c.ctx.organizationId, c.ctx.idempotency?.callerOrganizationId])).toEqual([
      [org.id, manager.id],
      [org.id, org.id],
    ]);
  });

  it("hands a manager's keyed publish on a client the manager's organization as the record's caller", async () => {
    answers.set("publishPassport", () => ({
      outcome: {
        case: "published",
        value: { passport: passportMessage({ organizationId: org.id }), warnings: [] },
      },
    }));
    const manager = await s.admin.createOrganization("Publishing agency", "pro", "active");
    await s.admin.linkClient(manager.id, org.id);
    const managerKey = await s.admin.createKey({ organizationId: manager.id, livemode: false });
    await s.admin.grantChecked(managerKey.record.id, org.id, ["passports:write"]);
    const res = await request(`${passports()}/pp_1/publish`, {
      key: managerKey.key,
      method: "POST",
      headers: { "idempotency-key": "k-publish" },
    });
    expect(res.status).toBe(200);
    expect(calls).toHaveLength(1);
    expect(calls[0]!.ctx).toMatchObject({
      organizationId: org.id,
      idempotency: { key: "k-publish", callerOrganizationId: manager.id },
    });
  });

  it("marks an answer the service replayed with Idempotent-Replayed, and only that one", async () => {
    answers.set("createPassport", () => {
      calls[calls.length - 1]!.ctx.outcome = { idempotentReplayed: true };
      return created();
    });
    const replayed = await request(passports(), {
      key: keys.test,
      body: { category: "textile" },
      headers: { "idempotency-key": "k-2" },
    });
    expect(replayed.status).toBe(201);
    expect(replayed.headers.get("idempotent-replayed")).toBe("true");
    answers.set("createPassport", created);
    const fresh = await request(passports(), {
      key: keys.test,
      body: { category: "textile" },
      headers: { "idempotency-key": "k-3" },
    });
    expect(fresh.headers.get("idempotent-replayed")).toBeNull();
  });
});

describe("error envelope", () => {
  it("carries a service ApiError's code, message and details", async () => {
    answers.set("getPassport", () => {
      throw viaGrpc(new ApiError("resource_not_found", "No passport pp_nope.", { passport_id: "pp_nope" }));
    });
    const res = await request(`${passports()}/pp_nope`, { key: keys.test });
    const e = expectEnvelope(res, 404, "resource_not_found");
    expect(e.message).toBe("No passport pp_nope.");
    expect(e.details).toEqual({ passport_id: "pp_nope" });
  });

  it("propagates the service's Retry-After header through the gRPC trailer", async () => {
    answers.set("createPassport", () => {
      throw viaGrpc(
        new ApiError("resource_busy", undefined, { passport_id: "pp_1" }, { "Retry-After": "7" }),
      );
    });
    const res = await request(passports(), { key: keys.test, body: { category: "textile" } });
    const e = expectEnvelope(res, 409, "resource_busy");
    expect(res.headers.get("retry-after")).toBe("7");
    // The header travels out of band: it is not left in the details.
    expect(e.details).toEqual({ passport_id: "pp_1" });
  });

  it("answers validation_failed details.issues from the service unchanged", async () => {
    const issues = [{ source: { pointer: "/data/x" }, rule: "unknown_field", message: "x is not a field." }];
    answers.set("createPassport", () => {
      throw viaGrpc(new ApiError("validation_failed", "Bad.", { issues }));
    });
    const res = await request(passports(), { key: keys.test, body: { category: "textile", data: { x: 1 } } });
    expect(expectEnvelope(res, 422, "validation_failed").details).toEqual({ issues });
  });

  it("turns an unexpected failure into internal_error without leaking it", async () => {
    answers.set("getPassport", () => {
      throw new Error("boom: select * from passport.passport");
    });
    const res = await request(`${passports()}/pp_1`, { key: keys.test });
    expectEnvelope(res, 500, "internal_error");
    expect(res.text).not.toMatch(/boom|select|passport\.passport|at .*\.ts/);
  });

  it("refuses before calling a service when the key, organization or scope is wrong", async () => {
    expect(expectEnvelope(await request(passports()), 401, "invalid_key").details).toEqual({
      reason: "missing",
    });
    expectEnvelope(await request(passports(), { key: keys.revoked }), 401, "key_revoked");
    expectEnvelope(
      await request("/v1/organizations/-/passports", { key: keys.test }),
      400,
      "wildcard_not_supported",
    );
    expectEnvelope(
      await request("/v1/organizations/org_nobody/passports", { key: keys.test }),
      404,
      "organization_not_found_or_not_granted",
    );
    const scope = expectEnvelope(
      await request(passports(), { key: keys.readOnly, body: { category: "textile" } }),
      403,
      "insufficient_scope",
    );
    expect(scope.details.required_scope).toBe("passports:write");
    expect(calls).toEqual([]);
  });

  it("answers a key whose record names the other mode than its text with 400 mode_mismatch, calling no service", async () => {
    const k = await s.admin.createKey({ organizationId: org.id, livemode: true });
    await sql`update api_key set livemode = false where id = ${k.record.id}`.execute(s.sql);
    for (const path of [passports(), "/v1/whoami"]) {
      const e = expectEnvelope(await request(path, { key: k.key }), 400, "mode_mismatch");
      expect(e.details).toEqual({ key_prefix_mode: "live" });
    }
    expect(calls).toEqual([]);
  });

  it("checks a key sent to an endpoint that needs none", async () => {
    expectEnvelope(await request("/v1/categories", { key: keys.revoked }), 401, "key_revoked");
    expect(calls).toEqual([]);
  });
});

describe("HTTP hygiene", () => {
  const paths = [...new Set(ROUTES.map((r) => r.path))];
  const concrete = (path: string) => `/v1${path.replace(/\{(\w+)\}/g, (_m, name: string) => `some_${name}`)}`;

  it.each(paths)("answers 405 with the Allow list the route table gives for %s", async (path) => {
    const allow = allowedMethods(ROUTES, path);
    for (const method of ["PUT", "DELETE", "PATCH", "POST"].filter((m) => !allow.includes(m))) {
      const res = await request(concrete(path), { method, key: keys.test });
      const e = expectEnvelope(res, 405, "method_not_allowed");
      expect(res.headers.get("allow")).toBe(allow.join(", "));
      expect(e.details).toEqual({ allow });
    }
    expect(calls).toEqual([]);
  });

  it("lists the methods of a path with several operations", () => {
    expect(allowedMethods(ROUTES, "/organizations/{organization}/passports")).toEqual([
      "GET",
      "HEAD",
      "POST",
    ]);
    expect(allowedMethods(ROUTES, "/categories")).toEqual(["GET", "HEAD"]);
  });

  it("refuses a body that is not JSON with 415", async () => {
    for (const contentType of ["text/plain", "application/x-www-form-urlencoded", "application/xml"]) {
      const res = await request(passports(), { key: keys.test, raw: "category=textile", contentType });
      expect(expectEnvelope(res, 415, "unsupported_media_type").details).toEqual({
        content_type: contentType,
      });
    }
    expect(calls).toEqual([]);
  });

  it("accepts application/json with a charset, and an empty body as {}", async () => {
    answers.set("createPassport", () => ({ passport: passportMessage() }));
    const res = await request(passports(), {
      key: keys.test,
      raw: '{"category":"textile"}',
      contentType: "application/json; charset=utf-8",
    });
    expect(res.status).toBe(201);
    // An empty body is {}: its missing category is refused, after the service had its say on the rest.
    const empty = await request(passports(), { key: keys.test, method: "POST" });
    expect(expectEnvelope(empty, 422, "validation_failed").details.issues).toEqual([
      { source: { pointer: "/category" }, rule: "required", message: "category is required." },
    ]);
    expect(calls.map((c) => c.req)).toEqual([
      { category: "textile", dataJson: "" },
      { category: "", dataJson: "", validateOnly: true },
    ]);
  });

  it("refuses a body over the route's ceiling with 413 and details.limit_bytes", async () => {
    const limit = ROUTES.find((r) => r.operationId === "createPassport")!.bodyLimitBytes!;
    expect(limit).toBe(1 * MiB);
    const raw = JSON.stringify({ category: "textile", data: { product_description: "x".repeat(limit) } });
    const res = await request(passports(), { key: keys.test, raw });
    expect(expectEnvelope(res, 413, "payload_too_large").details).toEqual({ limit_bytes: limit });
    expect(calls).toEqual([]);
  });

  it("refuses malformed JSON with 400 invalid_request", async () => {
    // Strict parsing: only an object or an array at the top level.
    for (const raw of ["{bad", '{"category": "textile",}', '"just a string"', "null", "42"]) {
      const res = await request(passports(), { key: keys.test, raw });
      const e = expectEnvelope(res, 400, "invalid_request");
      expect(e.details).toEqual({ issues: [{ source: { pointer: "" }, rule: "json_syntax" }] });
    }
    expect(calls).toEqual([]);
  });

  it("refuses a JSON array body with 422 at the root", async () => {
    for (const raw of ["[]", '[{"category":"textile"}]']) {
      const res = await request(passports(), { key: keys.test, raw });
      expect(expectEnvelope(res, 422, "validation_failed").details.issues).toEqual([
        { source: { pointer: "" }, rule: "type", message: "expected an object" },
      ]);
    }
    expect(calls).toEqual([]);
  });

  it("answers unknown paths in the envelope", async () => {
    expectEnvelope(await request("/v1/nothing-here"), 404, "resource_not_found");
    expectEnvelope(await request("/nothing-here"), 404, "resource_not_found");
  });

  it("puts a distinct Request-Id on every response", async () => {
    answers.set("listCategories", () => ({ categories: [] }));
    const responses = [
      await request("/healthz"),
      await request("/readyz"),
      await request("/v1/categories"),
      await request(passports()),
      await request("/v1/categories", { method: "DELETE" }),
      await request("/nope"),
      await request(passports(), { key: keys.test, raw: "{" }),
    ];
    const ids = responses.map((r) => r.headers.get("request-id"));
    for (const id of ids) expect(id).toMatch(/^req_[0-9a-f]{24}$/);
    expect(new Set(ids).size).toBe(ids.length);
  });
});

describe("query parameters", () => {
  it("passes the list parameters of passports through", async () => {
    answers.set("listPassports", () => ({ passports: [], hasMore: false, nextCursor: "" }));
    const q =
      "limit=5&cursor=abc_DEF-1&status=draft&category=textile&updated_since=2025-01-01T00%3A00%3A00%2B02%3A00";
    expect((await request(`${passports()}?${q}`, { key: keys.test })).status).toBe(200);
    expect(calls[0]!.req).toEqual({
      limit: 5,
      cursor: "abc_DEF-1",
      status: passportV1.PassportStatus.DRAFT,
      category: "textile",
      updatedSince: at("2024-12-31T22:00:00Z"),
    });
    await request(passports(), { key: keys.test });
    expect(calls[1]!.req).toEqual({
      limit: 20,
      cursor: "",
      status: passportV1.PassportStatus.UNSPECIFIED,
      category: "",
    });
  });

  it("passes a repeated type of the events feed as a list", async () => {
    answers.set("listEvents", () => ({
      events: [],
      eventJson: [],
      pageJson: Buffer.from("[]"),
      hasMore: false,
      nextCursor: "c",
    }));
    const feed = `/v1/organizations/${org.id}/events`;
    await request(`${feed}?type=passport.created&type=passport.updated&limit=10&cursor=c1`, {
      key: keys.test,
    });
    await request(`${feed}?type=passport.published`, { key: keys.test });
    await request(feed, { key: keys.test });
    expect(calls.map((c) => c.req)).toEqual([
      {
        limit: 10,
        cursor: "c1",
        types: ["passport.created", "passport.updated"],
        asPage: true,
        asJson: true,
      },
      { limit: 20, cursor: "", types: ["passport.published"], asPage: true, asJson: true },
      { limit: 20, cursor: "", types: [], asPage: true, asJson: true },
    ]);
  });

  it.each([
    ["limit", "/passports?limit=1&limit=2"],
    ["cursor", "/passports?cursor=a&cursor=b"],
    ["status", "/passports?status=draft&status=published"],
    ["limit", "/events?limit=5&limit=5"],
  ])("refuses a repeated single-valued %s with invalid_request naming it", async (parameter, path) => {
    const res = await request(`/v1/organizations/${org.id}${path}`, { key: keys.test });
    const e = expectEnvelope(res, 400, "invalid_request");
    expect(e.details.issues).toEqual([
      { source: { parameter }, rule: "single_value", message: `${parameter} may be given once.` },
    ]);
    expect(calls).toEqual([]);
  });
});

describe("typed requests: the edge checks the syntax, the service the rest", () => {
  const issue = (pointer: string, rule: string, message: string) => ({ source: { pointer }, rule, message });

  it("lists the edge's and the service's issues of a create body member by member, as one check would", async () => {
    answers.set("createPassport", () => {
      throw viaGrpc(
        validationFailed([
          issue(
            "/category",
            "unknown_category",
            "spaceship is not a category; GET /v1/categories lists them.",
          ),
          // The service checked data as {}: the edge refused that member itself, so this one goes.
          issue("/data/product_name", "required", "product_name is required."),
        ]),
      );
    });
    const res = await request(passports(), {
      key: keys.test,
      body: { data: 5, extra: true, category: "spaceship", external_id: 7, "a/b": 1 },
    });
    const e = expectEnvelope(res, 422, "validation_failed");
    expect(e.details.issues).toEqual([
      issue("/extra", "unknown_field", "extra is not a field of this body."),
      issue("/a~1b", "unknown_field", "a/b is not a field of this body."),
      issue("/category", "unknown_category", "spaceship is not a category; GET /v1/categories lists them."),
      issue("/external_id", "type", "external_id must be a string."),
      issue("/data", "type", "data must be an object."),
    ]);
    expect(e.message).toBe("The request body failed validation (5 issues, the first at /extra).");
    // The service was asked to check what passed the edge, and to write nothing.
    expect(calls.map((c) => c.req)).toEqual([{ category: "spaceship", dataJson: "", validateOnly: true }]);
  });

  it("answers the edge's issues alone when the service finds none", async () => {
    answers.set("createPassport", () => ({}));
    const res = await request(passports(), { key: keys.test, body: { category: 7 } });
    expect(expectEnvelope(res, 422, "validation_failed")).toMatchObject({
      message: "The request body failed validation (1 issue at /category).",
      details: { issues: [issue("/category", "type", "category must be a string.")] },
    });
  });

  it("answers a refusal the service makes before looking at the body, such as the plan's", async () => {
    answers.set("createPassport", () => {
      throw viaGrpc(new ApiError("payment_overdue", undefined, { plan_id: "pro" }));
    });
    const res = await request(passports(), { key: keys.live, body: { category: 7 } });
    expect(expectEnvelope(res, 402, "payment_overdue").details).toEqual({ plan_id: "pro" });
  });

  it.each([
    ["status", "status=archived"],
    ["updated_since", "updated_since=yesterday"],
    ["updated_since", "updated_since=2025-13-45T00:00:00Z"],
    ["updated_since", "updated_since=2025-01-01"],
    // RFC 3339 needs an offset: without one the instant would depend on the server's time zone.
    ["updated_since", "updated_since=2025-01-01T00:00:00"],
    // A day the month does not have is refused, not rolled over into the next month.
    ["updated_since", "updated_since=2025-02-30T00:00:00Z"],
    ["limit", "limit=0"],
    ["limit", "limit=101"],
    ["limit", "limit=ten"],
    ["limit", "limit=-1"],
  ])("refuses a bad %s of the passport list as invalid_request naming it (%s)", async (parameter, q) => {
    const res = await request(`${passports()}?${q}`, { key: keys.test });
    const e = expectEnvelope(res, 400, "invalid_request");
    expect(e.details.issues.map((i: { source: { parameter: string } }) => i.source.parameter)).toEqual([
      parameter,
    ]);
    expect(calls).toEqual([]);
  });

  it("checks a list's category before its updated_since, as the spec orders them", async () => {
    const unknown = invalidParameter("category", "unknown_category", "spaceship is not a category.");
    answers.set("listPassports", () => {
      throw viaGrpc(unknown);
    });
    const bad = await request(`${passports()}?category=spaceship&updated_since=yesterday&limit=5&cursor=c`, {
      key: keys.test,
    });
    expect(expectEnvelope(bad, 400, "invalid_request").details).toEqual(unknown.details);
    expect(calls.map((c) => c.req)).toEqual([
      {
        limit: 5,
        status: passportV1.PassportStatus.UNSPECIFIED,
        category: "spaceship",
        validateOnly: true,
      },
    ]);

    answers.set("listPassports", () => ({ passports: [], hasMore: false, nextCursor: "" }));
    const since = await request(`${passports()}?category=textile&updated_since=yesterday`, {
      key: keys.test,
    });
    expect(expectEnvelope(since, 400, "invalid_request").details.issues[0].source).toEqual({
      parameter: "updated_since",
    });
    calls.length = 0;
    await request(`${passports()}?updated_since=yesterday`, { key: keys.test });
    expect(calls).toEqual([]);
  });

  it.each([["0"], ["-1"], ["abc"], ["101"], ["1.5"]])(
    "refuses limit %j of the events feed with invalid_request",
    async (limit) => {
      const res = await request(`/v1/organizations/${org.id}/events?limit=${limit}`, { key: keys.test });
      expect(expectEnvelope(res, 400, "invalid_request").details).toMatchObject({
        issues: [{ source: { parameter: "limit" } }],
      });
      expect(calls).toEqual([]);
    },
  );

  it("answers a publish that a person must approve with 202 human_approval_required", async () => {
    answers.set("publishPassport", () => ({
      outcome: {
        case: "approvalRequired",
        value: { passportId: "pp_1", approvalId: "pa_1", reviewUrl: "https://app.test/approvals/pa_1" },
      },
    }));
    const res = await request(`${passports()}/pp_1/publish`, { key: keys.test, method: "POST" });
    const e = expectEnvelope(res, 202, "human_approval_required");
    expect(e.message).toBe(
      "A connector asked to publish: a person at the organization must approve it. Nothing was published.",
    );
    expect(e.details).toEqual({
      passport_id: "pp_1",
      approval_id: "pa_1",
      review_url: "https://app.test/approvals/pa_1",
    });
    expect(calls[0]!.req).toEqual({ id: "pp_1" });
  });

  it("answers a publish with the passport and its warnings, the fingerprint passed as a field", async () => {
    answers.set("publishPassport", () => ({
      outcome: {
        case: "published",
        value: {
          passport: passportMessage({ status: passportV1.PassportStatus.PUBLISHED, version: 2 }),
          warnings: [{ code: "environmental_claim_detected", message: "m", docUrl: "d", pointer: "" }],
        },
      },
    }));
    const fingerprint = "ab".repeat(32);
    const res = await request(`${passports()}/pp_1/publish`, {
      key: keys.test,
      body: { variant_review_fingerprint: fingerprint },
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      status: "published",
      version: 2,
      warnings: [{ code: "environmental_claim_detected", message: "m", doc_url: "d", pointer: null }],
    });
    expect(calls[0]!.req).toEqual({ id: "pp_1", variantReviewFingerprint: fingerprint });
  });
});

describe("probes", () => {
  it("answers /healthz without a credential", async () => {
    const res = await request("/healthz");
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: "ok" });
  });

  it("answers /readyz when the database answers, and an enveloped 500 when it does not", async () => {
    const ok = await request("/readyz");
    expect(ok.status).toBe(200);
    expect(ok.body).toEqual({ status: "ready" });

    const down = await listen(async () => {
      throw new Error("connect ECONNREFUSED 127.0.0.1:5432");
    });
    try {
      const res = await fetch(`${down.base}/readyz`);
      const body = (await res.json()) as { error: { code: string; details: unknown } };
      expect(res.status).toBe(500);
      expect(body.error.code).toBe("internal_error");
      expect(body.error.details).toEqual({ reason: "not_ready" });
      expect(JSON.stringify(body)).not.toContain("ECONNREFUSED");
    } finally {
      await close(down.server);
    }
  });
});
