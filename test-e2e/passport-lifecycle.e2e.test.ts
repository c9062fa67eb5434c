/**
 * A passport from draft to published and through the rest of its life, as the spec says: the
 * integrator's steps through the SDK (@dpp/client), malformed headers as raw requests.
 */
import { isDppError, type DppError, type Event } from "@dpp/client";
import { envelope, startHarness, type Harness, type Tenant } from "./support/harness";

let h: Harness;
let t: Tenant;

beforeAll(async () => {
  h = await startHarness("e2e_passport_lifecycle");
  t = await h.tenant("Lifecycle Brand");
});
afterAll(() => h?.close());

const base = () => `/organizations/${t.organizationId}/passports`;
const org = (key: string) => h.sdk(key).organization(t.organizationId);
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
type TextileData = Partial<ReturnType<typeof complete>> & { product_description?: string };

async function create(key: string, data: TextileData) {
  const p = await org(key).passports.create({ category: "textile", data });
  expect(p.lastResponse.status).toBe(201);
  return p;
}

/** The refusal of a call that must be refused. */
async function refusal(call: Promise<unknown>): Promise<DppError> {
  const err = await call.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!isDppError(err)) throw new Error(`expected a refusal, got ${String(err)}`);
  return err;
}

describe("PATCH", () => {
  it("merges, bumps the version on change only, and checks Expected-Version", async () => {
    const passports = org(t.testKey).passports;
    const p = await create(t.testKey, { product_name: "A", product_description: "old" });
    const res = await passports.update(
      p.id,
      { data: { product_description: null, gtin: "96385074" } },
      { expectedVersion: 1 },
    );
    expect(res.lastResponse.status).toBe(200);
    expect(res).toMatchObject({
      version: 2,
      gtin: "00000096385074",
      data: { product_name: "A", gtin: "00000096385074" },
    });
    expect(res.data).not.toHaveProperty("product_description");

    const same = await passports.update(p.id, { data: { product_name: "A" } });
    expect(same.version).toBe(2);

    const stale = await refusal(
      passports.update(p.id, { data: { product_name: "B" } }, { expectedVersion: 1 }),
    );
    expect(stale).toMatchObject({
      status: 412,
      code: "precondition_failed",
      details: { current_version: 2 },
    });

    // Not a key of the textile schema: not a body the typed client can send.
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
    const passports = org(t.liveKey).passports;
    const p = await create(t.liveKey, {
      ...complete("4006381333931"),
      product_description: "An eco-friendly tee",
    });
    const v = await passports.validate(p.id, { dry_run: true });
    expect(v.lastResponse.status).toBe(200);
    expect(v).toMatchObject({
      object: "validation",
      passport_id: p.id,
      valid: true,
      publishable: true,
      dry_run: true,
      warning_count: 1,
    });

    const pub = await passports.publish(p.id);
    expect(pub.lastResponse.status).toBe(200);
    expect(pub).toMatchObject({ status: "published", version: 2 });
    expect(pub.warnings).toEqual([
      expect.objectContaining({ code: "environmental_claim_detected", pointer: "/data/product_description" }),
    ]);

    const links = await passports.links(p.id);
    expect(links.lastResponse.status).toBe(200);
    expect(links).toMatchObject({
      object: "passport_links",
      resolves_publicly: true,
      not_resolvable_reason: null,
      gs1_digital_link: { gtin14: "04006381333931", unavailable_reason: null },
    });
    expect(links.gs1_digital_link.uri).toMatch(/\/01\/04006381333931$/);

    const again = await refusal(passports.publish(p.id));
    expect(again).toMatchObject({ status: 409, code: "wrong_status", details: { status: "published" } });

    const un = await passports.unpublish(p.id, { expectedVersion: 2 });
    expect(un.lastResponse.status).toBe(200);
    expect(un).toMatchObject({ status: "draft", version: 3 });
    expect(await passports.trash(p.id)).toMatchObject({ status: "trashed", version: 4 });
    expect(await passports.restore(p.id)).toMatchObject({ status: "draft", version: 5, trashed_at: null });
    const notTrashed = await refusal(passports.restore(p.id));
    expect([notTrashed.status, notTrashed.code]).toEqual([409, "not_trashed"]);

    const want = [
      "passport.created",
      "passport.published",
      "passport.unpublished",
      "passport.trashed",
      "passport.restored",
    ];
    let feed: Event[] = [];
    for (let i = 0; i < 150 && feed.length < want.length; i++) {
      const all = await org(t.liveKey).events.list({ limit: 100 }).toArray();
      feed = all.filter((e) => e.related.object === "passport" && e.related.id === p.id);
      if (feed.length < want.length) await new Promise((r) => setTimeout(r, 100));
    }
    expect(feed.map((e) => e.type)).toEqual(want);
    expect(feed[1]!.related).toEqual({
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
    const res = await refusal(org(t.testKey).passports.publish(p.id, {}));
    expect([res.status, res.code]).toEqual([422, "gtin_required"]);
    const links = await org(t.testKey).passports.links(p.id);
    expect(links).toMatchObject({
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
    const res = await refusal(org(connector.key).passports.publish(p.id));
    expect([res.status, res.code]).toEqual([202, "human_approval_required"]);
    expect(res.details).toEqual({
      passport_id: p.id,
      approval_id: expect.stringMatching(/^pa_/),
      review_url: expect.stringMatching(/\/publish-approvals\/pa_/),
    });
    expect(await org(t.testKey).passports.get(p.id)).toMatchObject({ status: "draft", version: 1 });
  });

  it("refuses live writes on a trial with no_subscription, test writes go through", async () => {
    const trial = await h.tenant("Trial Brand", "trial");
    const live = await refusal(
      h.sdk(trial.liveKey).organization(trial.organizationId).passports.create({ category: "textile" }),
    );
    expect(live).toMatchObject({
      status: 402,
      code: "no_subscription",
      details: { subscription_status: "trialing" },
    });
    const test = await h
      .sdk(trial.testKey)
      .organization(trial.organizationId)
      .passports.create({ category: "textile" });
    expect(test.lastResponse.status).toBe(201);
  });
});
