/** An integrator's journey: create, read, list, paginate, and the event feed. */
import { envelope, startHarness, type Harness, type Tenant } from "./support/harness";

let h: Harness;
let t: Tenant;
let other: Tenant;

beforeAll(async () => {
  h = await startHarness("e2e_passports");
  t = await h.tenant("Acme Textiles");
  other = await h.tenant("Other Brand");
});
afterAll(() => h?.close());

const passports = (org: string) => `/organizations/${org}/passports`;
const events = (org: string) => `/organizations/${org}/events`;

async function feed(org: string, key: string, query = ""): Promise<any[]> {
  const out: any[] = [];
  let cursor: string | undefined;
  for (let i = 0; i < 50; i++) {
    const q = [query, cursor ? `cursor=${encodeURIComponent(cursor)}` : ""].filter(Boolean).join("&");
    const res = await h.request(`${events(org)}?limit=100${q ? `&${q}` : ""}`, { key });
    expect(res.status).toBe(200);
    out.push(...res.body.data);
    expect(typeof res.body.next_cursor).toBe("string");
    cursor = res.body.next_cursor;
    if (!res.body.has_more) break;
  }
  return out;
}

async function waitForEvents(org: string, key: string, n: number, query = ""): Promise<any[]> {
  const until = Date.now() + 15000;
  for (;;) {
    const got = await feed(org, key, query);
    if (got.length >= n || Date.now() > until) return got;
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe("passports", () => {
  let created: any;

  it("creates a draft passport shaped as the spec says", async () => {
    const res = await h.request(passports(t.organizationId), {
      key: t.testKey,
      body: {
        category: "textile",
        external_id: "SKU-1",
        data: {
          product_name: "Organic T-shirt",
          manufacturer_country: "PT",
          material_composition: [{ fiber: "cotton", percentage: 100 }],
          gtin: "4006381333931",
        },
      },
    });
    expect(res.status).toBe(201);
    created = res.body;
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
    expect(created.data.product_name).toBe("Organic T-shirt");
    expect(new Date(created.created_at).toISOString()).toBe(created.created_at);
  });

  it("reads it back", async () => {
    const res = await h.request(`${passports(t.organizationId)}/${created.id}`, { key: t.testKey });
    expect(res.status).toBe(200);
    expect(res.body).toEqual(created);
  });

  it("keeps test and live apart and other organizations out", async () => {
    const live = await h.request(`${passports(t.organizationId)}/${created.id}`, { key: t.liveKey });
    expect(live.status).toBe(404);
    expect(envelope(live).code).toBe("resource_not_found");
    const listLive = await h.request(passports(t.organizationId), { key: t.liveKey });
    expect(listLive.body.data).toEqual([]);
    const foreign = await h.request(`${passports(t.organizationId)}/${created.id}`, { key: other.testKey });
    expect(foreign.status).toBe(404);
    expect(envelope(foreign).code).toBe("organization_not_found_or_not_granted");
  });

  it("refuses a second passport with the same external_id in the same mode, not in the other", async () => {
    const dup = await h.request(passports(t.organizationId), {
      key: t.testKey,
      body: { category: "textile", external_id: "SKU-1" },
    });
    expect(dup.status).toBe(409);
    const e = envelope(dup);
    expect(e.code).toBe("already_exists");
    expect(e.details.passport_id).toBe(created.id);
    const live = await h.request(passports(t.organizationId), {
      key: t.liveKey,
      body: { category: "textile", external_id: "SKU-1" },
    });
    expect(live.status).toBe(201);
    expect(live.body.livemode).toBe(true);
  });

  it("refuses a GTIN another passport holds, naming it", async () => {
    const res = await h.request(passports(t.organizationId), {
      key: t.testKey,
      body: { category: "textile", data: { gtin: "04006381333931" } },
    });
    expect(res.status).toBe(409);
    const e = envelope(res);
    expect(e.code).toBe("gtin_in_use");
    expect(e.details).toMatchObject({
      passport_id: created.id,
      product_name: "Organic T-shirt",
      role: "lead",
    });
  });

  it("refuses unknown data keys and bad values with JSON Pointers, storing nothing", async () => {
    const before = await h.request(`${passports(t.organizationId)}?limit=100`, { key: t.testKey });
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
    const after = await h.request(`${passports(t.organizationId)}?limit=100`, { key: t.testKey });
    expect(after.body.data.length).toBe(before.body.data.length);
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
    expect(e.message).toBe("The request body failed validation (3 issues at /extra).");
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
    const res = await h.request(`${passports(t.organizationId)}?category=spaceship&updated_since=yesterday`, {
      key: t.testKey,
    });
    expect(res.status).toBe(400);
    expect(envelope(res).details.issues).toEqual([
      expect.objectContaining({ source: { parameter: "category" }, rule: "unknown_category" }),
    ]);
  });

  it("lists newest first and paginates with cursors that encode their filters", async () => {
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const r = await h.request(passports(t.organizationId), {
        key: t.testKey,
        body: { category: i % 2 ? "battery" : "general", data: { product_name: `P${i}` } },
      });
      expect(r.status).toBe(201);
      ids.push(r.body.id);
    }
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const q: string = cursor ? `&cursor=${encodeURIComponent(cursor)}` : "";
      const page = await h.request(`${passports(t.organizationId)}?limit=2${q}`, { key: t.testKey });
      expect(page.status).toBe(200);
      expect(page.body.object).toBe("list");
      expect(page.body.data.length).toBeLessThanOrEqual(2);
      seen.push(...page.body.data.map((p: any) => p.id));
      cursor = page.body.has_more ? page.body.next_cursor : null;
      if (!page.body.has_more) expect(page.body.next_cursor).toBeNull();
      pages++;
    } while (cursor);
    expect(pages).toBe(Math.ceil(seen.length / 2));
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen.slice(0, 5)).toEqual([...ids].reverse());
    expect(seen).toContain(created.id);

    const batteries = await h.request(`${passports(t.organizationId)}?category=battery&limit=1`, {
      key: t.testKey,
    });
    expect(batteries.body.data.every((p: any) => p.category === "battery")).toBe(true);
    expect(batteries.body.has_more).toBe(true);
    const misuse = await h.request(
      `${passports(t.organizationId)}?category=general&limit=1&cursor=${encodeURIComponent(batteries.body.next_cursor)}`,
      { key: t.testKey },
    );
    expect(misuse.status).toBe(400);
    expect(envelope(misuse).code).toBe("cursor_invalid");

    const drafts = await h.request(`${passports(t.organizationId)}?status=draft&limit=100`, {
      key: t.testKey,
    });
    expect(drafts.body.data.length).toBe(seen.length);
    const future = await h.request(`${passports(t.organizationId)}?updated_since=2999-01-01T00:00:00Z`, {
      key: t.testKey,
    });
    expect(future.body.data).toEqual([]);
    const badDate = await h.request(`${passports(t.organizationId)}?updated_since=yesterday`, {
      key: t.testKey,
    });
    expect(badDate.status).toBe(400);
    expect(envelope(badDate).code).toBe("invalid_request");
    const badLimit = await h.request(`${passports(t.organizationId)}?limit=0`, { key: t.testKey });
    expect(badLimit.status).toBe(400);
  });

  it("records passport.created in the feed, oldest first, once per passport", async () => {
    const list = await h.request(`${passports(t.organizationId)}?limit=100`, { key: t.testKey });
    const expected = list.body.data.map((p: any) => p.id).reverse();
    const got = await waitForEvents(t.organizationId, t.testKey, expected.length);
    expect(got.map((e) => e.related.id)).toEqual(expected);
    const first = got[0];
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

    const liveFeed = await waitForEvents(t.organizationId, t.liveKey, 1);
    expect(liveFeed).toHaveLength(1);
    expect(liveFeed[0].livemode).toBe(true);
    expect(await feed(other.organizationId, other.testKey)).toEqual([]);
  });

  it("filters the feed by repeatable type and pages forward with next_cursor", async () => {
    const none = await h.request(`${events(t.organizationId)}?type=passport.published`, { key: t.testKey });
    expect(none.status).toBe(200);
    expect(none.body.data).toEqual([]);
    expect(none.body.has_more).toBe(false);
    expect(typeof none.body.next_cursor).toBe("string");
    const both = await feed(t.organizationId, t.testKey, "type=passport.published&type=passport.created");
    expect(both.length).toBeGreaterThan(0);

    const page1 = await h.request(`${events(t.organizationId)}?limit=2`, { key: t.testKey });
    const rest = await h.request(
      `${events(t.organizationId)}?limit=100&cursor=${encodeURIComponent(page1.body.next_cursor)}`,
      { key: t.testKey },
    );
    expect(rest.body.has_more).toBe(false);
    expect(typeof rest.body.next_cursor).toBe("string");
    const all = await feed(t.organizationId, t.testKey);
    expect([...page1.body.data, ...rest.body.data].map((e: any) => e.id)).toEqual(all.map((e) => e.id));

    const tail = await h.request(
      `${events(t.organizationId)}?cursor=${encodeURIComponent(rest.body.next_cursor)}`,
      {
        key: t.testKey,
      },
    );
    expect(tail.body.data).toEqual([]);
    const r = await h.request(passports(t.organizationId), { key: t.testKey, body: { category: "general" } });
    const fresh = await (async () => {
      const until = Date.now() + 15000;
      for (;;) {
        const next = await h.request(
          `${events(t.organizationId)}?cursor=${encodeURIComponent(rest.body.next_cursor)}`,
          { key: t.testKey },
        );
        if (next.body.data.length || Date.now() > until) return next.body.data;
        await new Promise((res) => setTimeout(res, 100));
      }
    })();
    expect(fresh.map((e: any) => e.related.id)).toEqual([r.body.id]);

    const wrongFilter = await h.request(
      `${events(t.organizationId)}?type=passport.created&cursor=${encodeURIComponent(page1.body.next_cursor)}`,
      { key: t.testKey },
    );
    expect(wrongFilter.status).toBe(400);
    expect(envelope(wrongFilter).code).toBe("cursor_invalid");
  });
});

describe("categories", () => {
  it("lists categories and serves each field schema without a credential", async () => {
    const res = await h.request("/categories");
    expect(res.status).toBe(200);
    const ids = res.body.data.map((c: any) => c.id);
    expect(ids).toEqual(expect.arrayContaining(["textile", "battery", "general"]));
    const schema = await h.request("/categories/textile/schema");
    expect(schema.status).toBe(200);
    expect(schema.body.category).toBe("textile");
    const props = schema.body.json_schema.properties;
    for (const f of ["product_name", "material_composition", "recycled_content_percentage", "gtin"])
      expect(props[f]).toBeDefined();
    const missing = await h.request("/categories/spaceship/schema");
    expect(missing.status).toBe(404);
    expect(envelope(missing).code).toBe("resource_not_found");
  });
});
