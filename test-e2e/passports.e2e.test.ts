/**
 * An integrator's journey through the SDK (@dpp/client): create, read, list, paginate, and the
 * event feed. Bodies a typed client cannot send (unknown keys, wrong types) go through raw requests.
 */
import { isDppError, type DppError, type Event, type OrganizationClient, type Passport } from "@dpp/client";
import { envelope, startHarness, type Harness, type Tenant } from "./support/harness";

let h: Harness;
let t: Tenant;
let other: Tenant;
/** The organization through its test key, its live key, and another organization's test key. */
let test: OrganizationClient;
let live: OrganizationClient;
let foreign: OrganizationClient;

beforeAll(async () => {
  h = await startHarness("e2e_passports");
  t = await h.tenant("Acme Textiles");
  other = await h.tenant("Other Brand");
  test = h.sdk(t.testKey).organization(t.organizationId);
  live = h.sdk(t.liveKey).organization(t.organizationId);
  foreign = h.sdk(other.testKey).organization(t.organizationId);
});
afterAll(() => h?.close());

const passports = (org: string) => `/organizations/${org}/passports`;

/** The refusal of a call that must be refused. */
async function refusal(call: Promise<unknown>): Promise<DppError> {
  const err = await call.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!isDppError(err)) throw new Error(`expected a refusal, got ${String(err)}`);
  expect(err.requestId).toMatch(/^req_[0-9a-f]{24}$/);
  return err;
}

async function waitForEvents(org: OrganizationClient, n: number, type?: string[]): Promise<Event[]> {
  const until = Date.now() + 15000;
  for (;;) {
    const got = await org.events.list({ limit: 100, ...(type ? { type } : {}) }).toArray();
    if (got.length >= n || Date.now() > until) return got;
    await new Promise((r) => setTimeout(r, 100));
  }
}

const relatedId = (e: Event) => (e.related.object === "passport" ? e.related.id : undefined);

describe("passports", () => {
  let created: Passport;

  it("creates a draft passport shaped as the spec says", async () => {
    const p = await test.passports.create({
      category: "textile",
      external_id: "SKU-1",
      data: {
        product_name: "Organic T-shirt",
        manufacturer_country: "PT",
        material_composition: [{ fiber: "cotton", percentage: 100 }],
        gtin: "4006381333931",
      },
    });
    expect(p.lastResponse.status).toBe(201);
    expect(p.lastResponse.idempotencyKey).toMatch(/^dpp-client-/);
    created = p;
    expect(created).toMatchObject({
      object: "passport",
      organization_id: t.organizationId,
      category: "textile",
      status: "draft",
      gtin: "04006381333931",
      serial_number: null,
      external_id: "SKU-1",
      version: 1,
      livemode: false,
      registry_id: null,
      published_at: null,
      trashed_at: null,
    });
    expect(created.name).toBe(`organizations/${t.organizationId}/passports/${created.id}`);
    expect(p.data.product_name).toBe("Organic T-shirt");
    expect(new Date(created.created_at).toISOString()).toBe(created.created_at);
  });

  it("reads it back", async () => {
    const p = await test.passports.get(created.id);
    expect(p.lastResponse.status).toBe(200);
    expect(p).toEqual(created);
  });

  it("keeps test and live apart and other organizations out", async () => {
    const fromLive = await refusal(live.passports.get(created.id));
    expect([fromLive.status, fromLive.code]).toEqual([404, "resource_not_found"]);
    expect(await live.passports.list().toArray()).toEqual([]);
    const fromForeign = await refusal(foreign.passports.get(created.id));
    expect([fromForeign.status, fromForeign.code]).toEqual([404, "organization_not_found_or_not_granted"]);
  });

  it("refuses a second passport with the same external_id in the same mode, not in the other", async () => {
    const dup = await refusal(test.passports.create({ category: "textile", external_id: "SKU-1" }));
    expect(dup.status).toBe(409);
    expect(dup.code).toBe("already_exists");
    expect(dup.details.passport_id).toBe(created.id);
    const inLive = await live.passports.create({ category: "textile", external_id: "SKU-1" });
    expect(inLive.lastResponse.status).toBe(201);
    expect(inLive.livemode).toBe(true);
  });

  it("refuses a GTIN another passport holds, naming it", async () => {
    const e = await refusal(test.passports.create({ category: "textile", data: { gtin: "04006381333931" } }));
    expect(e.status).toBe(409);
    expect(e.code).toBe("gtin_in_use");
    expect(e.details).toMatchObject({
      passport_id: created.id,
      product_name: "Organic T-shirt",
      role: "lead",
    });
  });

  it("refuses unknown data keys and bad values with JSON Pointers, storing nothing", async () => {
    const before = await test.passports.list({ limit: 100 }).toArray();
    // Not a body the typed client can send: the raw request.
    const res = await h.request(passports(t.organizationId), {
      key: t.testKey,
      body: {
        category: "textile",
        data: { product_name: "X", colour_of_sky: "blue", material_composition: [{ fiber: "wool" }] },
      },
    });
    expect(res.status).toBe(422);
    const e = envelope(res);
    expect(e.code).toBe("validation_failed");
    const pointers = e.details.issues.map((i: any) => i.source.pointer);
    expect(pointers).toContain("/data/colour_of_sky");
    expect(pointers).toContain("/data/material_composition/0/percentage");
    for (const i of e.details.issues) expect(typeof i.rule).toBe("string");
    const after = await test.passports.list({ limit: 100 }).toArray();
    expect(after.length).toBe(before.length);
  });

  it("requires a known category", async () => {
    const missing = await h.request(passports(t.organizationId), { key: t.testKey, body: { data: {} } });
    expect(missing.status).toBe(422);
    expect(envelope(missing).details.issues).toEqual([
      expect.objectContaining({ source: { pointer: "/category" }, rule: "required" }),
    ]);
    const unknown = await h.request(passports(t.organizationId), {
      key: t.testKey,
      body: { category: "spaceship" },
    });
    expect(unknown.status).toBe(422);
    expect(envelope(unknown).details.issues[0].source.pointer).toBe("/category");
  });

  it("lists every issue of a body at once, member by member, wherever each is checked", async () => {
    const res = await h.request(passports(t.organizationId), {
      key: t.testKey,
      body: { category: "textile", extra: true, external_id: 5, data: { nope: 1 } },
    });
    expect(res.status).toBe(422);
    const e = envelope(res);
    expect(e.details.issues.map((i: any) => [i.source.pointer, i.rule])).toEqual([
      ["/extra", "unknown_field"],
      ["/external_id", "type"],
      ["/data/nope", "unknown_field"],
    ]);
    expect(e.message).toBe("The request body failed validation (3 issues, the first at /extra).");
  });

  it("refuses a live write the plan does not allow before looking at the body", async () => {
    const trial = await h.tenant("Trial Shape Brand", "trial");
    const res = await h.request(passports(trial.organizationId), {
      key: trial.liveKey,
      body: { category: 7, extra: true },
    });
    expect(res.status).toBe(402);
    expect(envelope(res).code).toBe("no_subscription");
  });

  it("checks a list's category before its updated_since", async () => {
    const e = await refusal(
      test.passports.list({ category: "spaceship", updated_since: "yesterday" }).toArray(),
    );
    expect(e.status).toBe(400);
    expect(e.details.issues).toEqual([
      expect.objectContaining({ source: { parameter: "category" }, rule: "unknown_category" }),
    ]);
  });

  it("lists newest first and paginates with cursors that encode their filters", async () => {
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const p = await test.passports.create({
        category: i % 2 ? "battery" : "general",
        data: { product_name: `P${i}` },
      });
      expect(p.lastResponse.status).toBe(201);
      ids.push(p.id);
    }
    const seen: string[] = [];
    let pages = 0;
    const all = test.passports.list({ limit: 2 });
    for await (const page of all.pages()) {
      expect(page.object).toBe("list");
      expect(page.data.length).toBeLessThanOrEqual(2);
      seen.push(...page.data.map((p) => p.id));
      if (!page.has_more) expect(page.next_cursor).toBeNull();
      pages++;
    }
    expect(pages).toBe(Math.ceil(seen.length / 2));
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen.slice(0, 5)).toEqual([...ids].reverse());
    expect(seen).toContain(created.id);

    const batteries = test.passports.list({ category: "battery", limit: 1 });
    const first = (await batteries.pages().next()).value!;
    expect(first.data.every((p) => p.category === "battery")).toBe(true);
    expect(first.has_more).toBe(true);
    const misuse = await refusal(
      test.passports.list({ category: "general", limit: 1, cursor: batteries.cursor! }).toArray(),
    );
    expect([misuse.status, misuse.code]).toEqual([400, "cursor_invalid"]);

    const drafts = await test.passports.list({ status: "draft", limit: 100 }).toArray();
    expect(drafts.length).toBe(seen.length);
    expect(await test.passports.list({ updated_since: "2999-01-01T00:00:00Z" }).toArray()).toEqual([]);
    const badDate = await refusal(test.passports.list({ updated_since: "yesterday" }).toArray());
    expect([badDate.status, badDate.code]).toEqual([400, "invalid_request"]);
    const badLimit = await refusal(test.passports.list({ limit: 0 }).toArray());
    expect(badLimit.status).toBe(400);
  });

  it("records passport.created in the feed, oldest first, once per passport", async () => {
    const list = await test.passports.list({ limit: 100 }).toArray();
    const expected = list.map((p) => p.id).reverse();
    const got = await waitForEvents(test, expected.length);
    expect(got.map(relatedId)).toEqual(expected);
    const first = got[0]!;
    expect(first).toMatchObject({
      object: "event",
      organization_id: t.organizationId,
      type: "passport.created",
      livemode: false,
      related: {
        object: "passport",
        id: created.id,
        name: `organizations/${t.organizationId}/passports/${created.id}`,
        category: "textile",
        status: "draft",
        previous_status: null,
        version: 1,
      },
    });
    expect(first.name).toBe(`organizations/${t.organizationId}/events/${first.id}`);
    expect(new Set(got.map((e) => e.id)).size).toBe(got.length);

    const liveFeed = await waitForEvents(live, 1);
    expect(liveFeed).toHaveLength(1);
    expect(liveFeed[0]!.livemode).toBe(true);
    expect(await h.sdk(other.testKey).organization(other.organizationId).events.list().toArray()).toEqual([]);
  });

  it("filters the feed by repeatable type and pages forward with next_cursor", async () => {
    const none = test.events.list({ type: ["passport.published"] });
    const page = (await none.pages().next()).value!;
    expect(page.data).toEqual([]);
    expect(page.has_more).toBe(false);
    expect(typeof page.next_cursor).toBe("string");
    const both = await test.events.list({ type: ["passport.published", "passport.created"] }).toArray();
    expect(both.length).toBeGreaterThan(0);

    const firstTwo = test.events.list({ limit: 2 });
    const page1 = (await firstTwo.pages().next()).value!;
    const rest = test.events.list({ limit: 100, cursor: firstTwo.cursor! });
    const restItems = await rest.toArray();
    expect(typeof rest.cursor).toBe("string");
    const all = await test.events.list({ limit: 100 }).toArray();
    expect([...page1.data, ...restItems].map((e) => e.id)).toEqual(all.map((e) => e.id));

    expect(await test.events.list({ cursor: rest.cursor! }).toArray()).toEqual([]);
    const r = await test.passports.create({ category: "general" });
    const until = Date.now() + 15000;
    let fresh: Event[] = [];
    while (!fresh.length && Date.now() < until) {
      fresh = await test.events.list({ cursor: rest.cursor! }).toArray();
      if (!fresh.length) await new Promise((res) => setTimeout(res, 100));
    }
    expect(fresh.map(relatedId)).toEqual([r.id]);

    const wrongFilter = await refusal(
      test.events.list({ type: ["passport.created"], cursor: firstTwo.cursor! }).toArray(),
    );
    expect([wrongFilter.status, wrongFilter.code]).toEqual([400, "cursor_invalid"]);
  });
});

describe("categories", () => {
  it("lists categories and serves each field schema without a credential", async () => {
    // Without a key: the raw request (the SDK always sends one).
    const res = await h.request("/categories");
    expect(res.status).toBe(200);
    const ids = res.body.data.map((c: any) => c.id);
    expect(ids).toEqual(expect.arrayContaining(["textile", "battery", "general"]));
    const dpp = h.sdk(t.testKey);
    expect((await dpp.categories().toArray()).map((c) => c.id)).toEqual(ids);
    const schema = await dpp.categorySchema("textile");
    expect(schema.category).toBe("textile");
    const fields = ["product_name", "material_composition", "recycled_content_percentage", "gtin"];
    expect(schema.json_schema.properties).toEqual(
      expect.objectContaining(Object.fromEntries(fields.map((f) => [f, expect.anything()]))),
    );
    const missing = await refusal(dpp.categorySchema("spaceship"));
    expect([missing.status, missing.code]).toEqual([404, "resource_not_found"]);
  });
});
