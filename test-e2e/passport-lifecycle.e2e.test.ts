/** A passport from draft to published and through the rest of its life, over HTTP, as the spec says. */
import { envelope, startHarness, type Harness, type Tenant } from "./support/harness";

let h: Harness;
let t: Tenant;

beforeAll(async () => {
  h = await startHarness("e2e_passport_lifecycle");
  t = await h.tenant("Lifecycle Brand");
});
afterAll(() => h?.close());

const base = () => `/organizations/${t.organizationId}/passports`;
const complete = (gtin: string) => ({
  product_name: "Organic T-shirt",
  manufacturer_name: "Acme",
  manufacturer_address: "1 Rua, Porto",
  manufacturer_country: "PT",
  material_composition: [{ fiber: "cotton", percentage: 100 }],
  substances_of_concern: [],
  recycling_instructions: "Textile bank",
  care_instructions: "30 °C",
  gtin,
});

async function create(key: string, data: Record<string, unknown>) {
  const res = await h.request(base(), { key, body: { category: "textile", data } });
  expect(res.status).toBe(201);
  return res.body;
}

describe("PATCH", () => {
  it("merges, bumps the version on change only, and checks Expected-Version", async () => {
    const p = await create(t.testKey, { product_name: "A", product_description: "old" });
    const res = await h.request(`${base()}/${p.id}`, {
      method: "PATCH",
      key: t.testKey,
      headers: { "expected-version": "1" },
      body: { data: { product_description: null, gtin: "96385074" } },
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      version: 2,
      gtin: "00000096385074",
      data: { product_name: "A", gtin: "00000096385074" },
    });
    expect(res.body.data.product_description).toBeUndefined();

    const same = await h.request(`${base()}/${p.id}`, {
      method: "PATCH",
      key: t.testKey,
      body: { data: { product_name: "A" } },
    });
    expect(same.body.version).toBe(2);

    const stale = await h.request(`${base()}/${p.id}`, {
      method: "PATCH",
      key: t.testKey,
      headers: { "expected-version": "1" },
      body: { data: { product_name: "B" } },
    });
    expect(stale.status).toBe(412);
    expect(envelope(stale)).toMatchObject({ code: "precondition_failed", details: { current_version: 2 } });

    const unknown = await h.request(`${base()}/${p.id}`, {
      method: "PATCH",
      key: t.testKey,
      body: { data: { colour: "red" } },
    });
    expect(unknown.status).toBe(422);
    expect(envelope(unknown).details.issues).toEqual([
      expect.objectContaining({ source: { pointer: "/data/colour" }, rule: "unknown_field" }),
    ]);
  });

  it("refuses malformed conditional headers with 400 before the body is read; If-Match: * on a missing passport is 404", async () => {
    const p = await create(t.testKey, { product_name: "A" });
    const bad: Record<string, string>[] = [
      { "if-match": '"abc"' },
      { "if-match": 'W/"1"' },
      { "expected-version": "-1" },
      { "expected-version": "two" },
    ];
    for (const headers of bad) {
      const res = await h.request(`${base()}/${p.id}`, {
        method: "PATCH",
        key: t.testKey,
        // A malformed Idempotency-Key and a non-JSON body too: the conditional header is refused first.
        headers: { ...headers, "content-type": "text/plain", "idempotency-key": "bad key" },
        raw: "not json",
      });
      expect(res.status).toBe(400);
      const e = envelope(res);
      expect(e.code).toBe("invalid_request");
      expect(e.details.issues[0].source.header).toBe(headers["if-match"] ? "If-Match" : "Expected-Version");
    }
    const ok = await h.request(`${base()}/${p.id}`, {
      method: "PATCH",
      key: t.testKey,
      headers: { "if-match": "*" },
      body: { data: { product_name: "B" } },
    });
    expect(ok.status).toBe(200);
    const missing = await h.request(`${base()}/pp_missing`, {
      method: "PATCH",
      key: t.testKey,
      headers: { "if-match": "*" },
      body: { data: { product_name: "B" } },
    });
    expect(missing.status).toBe(404);
    expect(envelope(missing).code).toBe("resource_not_found");
  });
});

describe("lifecycle", () => {
  it("validate → publish (warnings) → links → unpublish → trash → restore, with events", async () => {
    const p = await create(t.liveKey, {
      ...complete("4006381333931"),
      product_description: "An eco-friendly tee",
    });
    const v = await h.request(`${base()}/${p.id}/validate`, { key: t.liveKey, body: { dry_run: true } });
    expect(v.status).toBe(200);
    expect(v.body).toMatchObject({
      object: "validation",
      passport_id: p.id,
      valid: true,
      publishable: true,
      dry_run: true,
      warning_count: 1,
    });

    const pub = await h.request(`${base()}/${p.id}/publish`, { method: "POST", key: t.liveKey });
    expect(pub.status).toBe(200);
    expect(pub.body).toMatchObject({ status: "published", version: 2 });
    expect(pub.body.warnings).toEqual([
      expect.objectContaining({ code: "environmental_claim_detected", pointer: "/data/product_description" }),
    ]);

    const links = await h.request(`${base()}/${p.id}/links`, { key: t.liveKey });
    expect(links.status).toBe(200);
    expect(links.body).toMatchObject({
      object: "passport_links",
      resolves_publicly: true,
      not_resolvable_reason: null,
      gs1_digital_link: { gtin14: "04006381333931", unavailable_reason: null },
    });
    expect(links.body.gs1_digital_link.uri).toMatch(/\/01\/04006381333931$/);

    const again = await h.request(`${base()}/${p.id}/publish`, { method: "POST", key: t.liveKey });
    expect(again.status).toBe(409);
    expect(envelope(again)).toMatchObject({ code: "wrong_status", details: { status: "published" } });

    const un = await h.request(`${base()}/${p.id}/unpublish`, {
      method: "POST",
      key: t.liveKey,
      headers: { "expected-version": "2" },
    });
    expect(un.status).toBe(200);
    expect(un.body).toMatchObject({ status: "draft", version: 3 });
    const tr = await h.request(`${base()}/${p.id}/trash`, { method: "POST", key: t.liveKey });
    expect(tr.body).toMatchObject({ status: "trashed", version: 4 });
    const re = await h.request(`${base()}/${p.id}/restore`, { method: "POST", key: t.liveKey });
    expect(re.body).toMatchObject({ status: "draft", version: 5, trashed_at: null });
    const notTrashed = await h.request(`${base()}/${p.id}/restore`, { method: "POST", key: t.liveKey });
    expect(notTrashed.status).toBe(409);
    expect(envelope(notTrashed).code).toBe("not_trashed");

    const want = [
      "passport.created",
      "passport.published",
      "passport.unpublished",
      "passport.trashed",
      "passport.restored",
    ];
    let feed: any[] = [];
    for (let i = 0; i < 150 && feed.length < want.length; i++) {
      const res = await h.request(`/organizations/${t.organizationId}/events?limit=100`, { key: t.liveKey });
      feed = res.body.data.filter((e: any) => e.related.id === p.id);
      if (feed.length < want.length) await new Promise((r) => setTimeout(r, 100));
    }
    expect(feed.map((e) => e.type)).toEqual(want);
    expect(feed[1].related).toEqual({
      object: "passport",
      id: p.id,
      name: `organizations/${t.organizationId}/passports/${p.id}`,
      category: "textile",
      status: "published",
      previous_status: "draft",
      version: 2,
    });
  });

  it("needs a GTIN to publish, and says why links do not resolve", async () => {
    const { gtin: _g, ...noGtin } = complete("x");
    const p = await create(t.testKey, noGtin);
    const res = await h.request(`${base()}/${p.id}/publish`, { method: "POST", key: t.testKey, body: {} });
    expect(res.status).toBe(422);
    expect(envelope(res).code).toBe("gtin_required");
    const links = await h.request(`${base()}/${p.id}/links`, { key: t.testKey });
    expect(links.body).toMatchObject({
      resolves_publicly: false,
      not_resolvable_reason: "test_mode",
      gs1_digital_link: { uri: null, unavailable_reason: "gtin_missing" },
    });
  });

  it("answers a connector's publish with 202 human_approval_required and publishes nothing", async () => {
    const connector = await h.admin.createKey({
      organizationId: t.organizationId,
      livemode: false,
      kind: "connector",
    });
    const p = await create(t.testKey, complete("036000291452"));
    const res = await h.request(`${base()}/${p.id}/publish`, { method: "POST", key: connector.key });
    expect(res.status).toBe(202);
    expect(envelope(res)).toMatchObject({ code: "human_approval_required" });
    expect(envelope(res).details).toEqual({
      passport_id: p.id,
      approval_id: expect.stringMatching(/^pa_/),
      review_url: expect.stringMatching(/\/publish-approvals\/pa_/),
    });
    const got = await h.request(`${base()}/${p.id}`, { key: t.testKey });
    expect(got.body).toMatchObject({ status: "draft", version: 1 });
  });

  it("refuses live writes on a trial with no_subscription, test writes go through", async () => {
    const trial = await h.tenant("Trial Brand", "trial");
    const live = await h.request(`/organizations/${trial.organizationId}/passports`, {
      key: trial.liveKey,
      body: { category: "textile" },
    });
    expect(live.status).toBe(402);
    expect(envelope(live)).toMatchObject({
      code: "no_subscription",
      details: { subscription_status: "trialing" },
    });
    const test = await h.request(`/organizations/${trial.organizationId}/passports`, {
      key: trial.testKey,
      body: { category: "textile" },
    });
    expect(test.status).toBe(201);
  });
});
