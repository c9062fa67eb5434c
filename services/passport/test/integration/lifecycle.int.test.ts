/**
 * The passport service on its own: merge-patch updates, Expected-Version, the lifecycle state machine, publish
 * rules, validation records, links, GTIN claims, usage and test-mode retention.
 */
import { sql } from "kysely";
import { ApiError } from "@dpp/contract";
import { type RequestContext } from "@dpp/kit";
import { passportV1 } from "@dpp/proto";
import { PUBLISH_SLOT_STATUSES } from "../../src/domain/lifecycle";
import {
  context,
  liveTenant,
  randomGtin13,
  refusal,
  startHarness,
  tenantRowCounts,
  testTenant,
  type Harness,
  type Tenant,
  publishableTextile,
} from "../harness";

const { PassportStatus: Status, ValidationSeverity: Severity } = passportV1;

let h: Harness;
beforeAll(async () => {
  h = await startHarness("passport_lifecycle");
});
afterAll(() => h?.close());

const PRO = { planId: "pro", subscriptionStatus: "active", publishLimit: 1000 };
const ctx = (t: Tenant, extra: Partial<RequestContext> = {}): RequestContext => ({
  ...context(t),
  credentialKind: "secret",
  plan: PRO,
  ...extra,
});

/** Everything a textile passport needs to be published. */
const complete = (gtin?: string) => publishableTextile({ gtin });

const data = (p: { dataJson: string }) => JSON.parse(p.dataJson) as Record<string, unknown>;

async function events(t: Tenant, id: string) {
  const { rows } = await sql<{ type: string; payload: { related: Record<string, unknown> } }>`
    select type, payload from outbox where organization_id = ${t.organizationId} and livemode = ${t.livemode}
      and payload->'related'->>'id' = ${id} order by id`.execute(h.sql);
  return rows.map(
    (r) => ({ type: r.type, ...r.payload.related }) as Record<string, unknown> & { type: string },
  );
}

const patch = (
  t: Tenant,
  id: string,
  body: unknown,
  o: { expectedVersion?: number; c?: RequestContext } = {},
) =>
  h.client
    .updatePassport(
      { id, patchJson: JSON.stringify(body), expectedVersion: o.expectedVersion },
      { context: o.c ?? ctx(t) },
    )
    .then((r) => r.passport!);
const publishOutcome = (t: Tenant, id: string, c: RequestContext = ctx(t)) =>
  h.client.publishPassport({ id }, { context: c });
/** A publish that must publish: its passport and warnings. */
const publish = (t: Tenant, id: string, c: RequestContext = ctx(t)) =>
  publishOutcome(t, id, c).then(({ outcome }) => {
    if (outcome.case !== "published") throw new Error(`expected a publish, got ${String(outcome.case)}`);
    return outcome.value;
  });

describe("UpdatePassport (merge patch)", () => {
  it("merges data: omitted keys unchanged, null removes, arrays replaced whole; version +1; passport.updated", async () => {
    const t = testTenant();
    const p = await h.create(t, {
      category: "textile",
      data: {
        product_name: "A",
        product_description: "d",
        material_composition: [{ fiber: "cotton", percentage: 100 }],
      },
    });
    const u = await patch(t, p.id, {
      data: { product_description: null, material_composition: [{ fiber: "wool", percentage: 100 }] },
    });
    expect(u.version).toBe(2);
    expect(data(u)).toEqual({
      product_name: "A",
      material_composition: [{ fiber: "wool", percentage: 100 }],
    });
    expect(await events(t, p.id)).toEqual([
      expect.objectContaining({ type: "passport.created", version: 1 }),
      {
        type: "passport.updated",
        object: "passport",
        id: p.id,
        name: `organizations/${t.organizationId}/passports/${p.id}`,
        category: "textile",
        status: "draft",
        previous_status: "draft",
        version: 2,
      },
    ]);
  });

  it("leaves the version alone and emits nothing on a no-op", async () => {
    const t = testTenant();
    const p = await h.create(t, { category: "textile", data: { product_name: "A" } });
    const u = await patch(t, p.id, { data: { product_name: "A" } });
    expect(u.version).toBe(1);
    expect(u.updatedAt).toEqual(p.updatedAt);
    expect((await events(t, p.id)).map((e) => e.type)).toEqual(["passport.created"]);
  });

  it("refuses unknown keys with JSON Pointers and stores nothing", async () => {
    const t = testTenant();
    const p = await h.create(t, { category: "textile", data: { product_name: "A" } });
    const err = await refusal(
      patch(t, p.id, { status: "published", data: { colour: "red", product_name: "B" } }),
    );
    expect(err.code).toBe("validation_failed");
    expect(err.details.issues).toEqual([
      expect.objectContaining({ source: { pointer: "/status" }, rule: "read_only" }),
    ]);
    const err2 = await refusal(patch(t, p.id, { data: { colour: "red", product_name: "B" } }));
    expect(err2.details.issues).toEqual([
      expect.objectContaining({ source: { pointer: "/data/colour" }, rule: "unknown_field" }),
    ]);
    const got = await h.client.getPassport({ id: p.id }, { context: ctx(t) });
    expect(got.passport).toMatchObject({ version: 1 });
    expect(data(got.passport!)).toEqual({ product_name: "A" });
  });

  it("limits a patched external_id to 1..255 Unicode code points: 255 emoji are accepted, 256 refused", async () => {
    const emoji = (n: number) => "\u{1F642}".repeat(n);
    const t = testTenant();
    const p = await h.create(t, { category: "textile", external_id: "SKU-1", data: { product_name: "A" } });
    const u = await patch(t, p.id, { external_id: emoji(255) });
    expect([u.externalId, u.version]).toEqual([emoji(255), 2]);
    for (const externalId of [emoji(256), ""]) {
      const err = await refusal(patch(t, p.id, { external_id: externalId }));
      expect(err.code).toBe("validation_failed");
      expect(err.details.issues).toEqual([
        expect.objectContaining({ source: { pointer: "/external_id" }, rule: "length" }),
      ]);
    }
    const got = await h.client.getPassport({ id: p.id }, { context: ctx(t) });
    expect([got.passport!.externalId, got.passport!.version]).toEqual([emoji(255), 2]);
  });

  it("checks Expected-Version: 412 with current_version; concurrent writers with the same version: one wins", async () => {
    const t = testTenant();
    const p = await h.create(t, { category: "textile", data: { product_name: "A" } });
    const err = await refusal(patch(t, p.id, { data: { product_name: "B" } }, { expectedVersion: 7 }));
    expect(err.code).toBe("precondition_failed");
    expect(err.status).toBe(412);
    expect(err.details).toMatchObject({ current_version: 1, expected_version: 7 });
    const results = await Promise.allSettled(
      ["B", "C", "D"].map((n) => patch(t, p.id, { data: { product_name: n } }, { expectedVersion: 1 })),
    );
    expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(1);
    for (const r of results.filter((r): r is PromiseRejectedResult => r.status === "rejected"))
      expect((r.reason as ApiError).code).toBe("precondition_failed");
    const got = await h.client.getPassport({ id: p.id }, { context: ctx(t) });
    expect(got.passport!.version).toBe(2);
  });

  it("normalises a GTIN to 14 digits, moves its claim, and refuses another passport's GTIN with gtin_in_use", async () => {
    const t = testTenant();
    const g1 = randomGtin13();
    const g2 = randomGtin13();
    const a = await h.create(t, { category: "textile", data: { product_name: "Shirt A", gtin: g1 } });
    const b = await h.create(t, { category: "textile", data: { product_name: "Shirt B" } });
    const moved = await patch(t, a.id, { data: { gtin: g2 } });
    expect(moved.gtin).toBe(`0${g2}`);
    // g1 is free again: b can take it.
    expect((await patch(t, b.id, { data: { gtin: g1 } })).gtin).toBe(`0${g1}`);
    const err = await refusal(patch(t, b.id, { data: { gtin: g2 } }));
    expect(err.code).toBe("gtin_in_use");
    expect(err.details).toMatchObject({
      gtin: `0${g2}`,
      passport: `organizations/${t.organizationId}/passports/${a.id}`,
      product_name: "Shirt A",
      role: "lead",
    });
    const stored = await h.client.getPassport({ id: b.id }, { context: ctx(t) });
    expect(stored.passport!.gtin).toBe(`0${g1}`);
  });

  it("keeps trashed passports' GTINs claimed", async () => {
    const t = testTenant();
    const g = randomGtin13();
    const a = await h.create(t, { category: "textile", data: { product_name: "Trashed", gtin: g } });
    await h.client.trashPassport({ id: a.id }, { context: ctx(t) });
    const err = await refusal(h.create(t, { category: "textile", data: { gtin: g } }));
    expect(err.code).toBe("gtin_in_use");
    expect(err.details).toMatchObject({ product_name: "Trashed", role: "lead" });
  });

  it("refuses a connector's change to a non-draft with connector_writes_drafts_only and a review_url", async () => {
    const t = testTenant();
    const p = await h.create(t, { category: "textile", data: complete() });
    await publish(t, p.id);
    const err = await refusal(
      patch(t, p.id, { data: { product_name: "X" } }, { c: ctx(t, { credentialKind: "connector" }) }),
    );
    expect(err.code).toBe("connector_writes_drafts_only");
    expect(err.details.review_url).toMatch(/^https:\/\/app\.dpp\.example\/organizations\/.+\/passports\//);
  });
});

describe("lifecycle transitions", () => {
  it("publish → unpublish → trash → restore, each with its event and previous_status", async () => {
    const t = testTenant();
    const p = await h.create(t, { category: "textile", data: complete() });
    const pub = await publish(t, p.id);
    expect(pub.passport).toMatchObject({ status: Status.PUBLISHED, version: 2 });
    expect(pub.passport!.publishedAt).toBeDefined();
    const un = await h.client.unpublishPassport({ id: p.id, expectedVersion: 2 }, { context: ctx(t) });
    expect(un.passport).toMatchObject({
      status: Status.DRAFT,
      version: 3,
      publishedAt: pub.passport!.publishedAt,
    });
    const tr = await h.client.trashPassport({ id: p.id }, { context: ctx(t) });
    expect(tr.passport).toMatchObject({ status: Status.TRASHED, version: 4 });
    expect(tr.passport!.trashedAt).toBeDefined();
    const re = await h.client.restorePassport({ id: p.id }, { context: ctx(t) });
    expect(re.passport).toMatchObject({ status: Status.DRAFT, version: 5 });
    expect(re.passport!.trashedAt).toBeUndefined();
    expect((await events(t, p.id)).map((e) => [e.type, e.previous_status, e.status, e.version])).toEqual([
      ["passport.created", null, "draft", 1],
      ["passport.published", "draft", "published", 2],
      ["passport.unpublished", "published", "draft", 3],
      ["passport.trashed", "draft", "trashed", 4],
      ["passport.restored", "trashed", "draft", 5],
    ]);
  });

  it("refuses what the table does not allow: wrong_status, not_trashed, precondition_failed on unpublish", async () => {
    const t = testTenant();
    const p = await h.create(t, { category: "textile", data: complete() });
    expect((await refusal(h.client.restorePassport({ id: p.id }, { context: ctx(t) }))).code).toBe(
      "not_trashed",
    );
    expect(
      (await refusal(h.client.unpublishPassport({ id: p.id }, { context: ctx(t) }))).details,
    ).toMatchObject({ status: "draft", operation: "unpublish" });
    await publish(t, p.id);
    expect((await refusal(publish(t, p.id))).code).toBe("wrong_status");
    expect((await refusal(h.client.trashPassport({ id: p.id }, { context: ctx(t) }))).code).toBe(
      "wrong_status",
    );
    const stale = await refusal(
      h.client.unpublishPassport({ id: p.id, expectedVersion: 1 }, { context: ctx(t) }),
    );
    expect(stale.code).toBe("precondition_failed");
    expect(stale.details.current_version).toBe(2);
    const got = await h.client.getPassport({ id: p.id }, { context: ctx(t) });
    expect(got.passport).toMatchObject({ status: Status.PUBLISHED, version: 2 });
  });

  it("moves into and out of deactivated and readonly through the platform transitions", async () => {
    const t = testTenant();
    const p = await h.create(t, { category: "textile", data: complete() });
    await publish(t, p.id);
    const c = { context: ctx(t) };
    expect((await h.client.deactivatePassport({ id: p.id }, c)).passport!.status).toBe(Status.DEACTIVATED);
    // Deactivated: still editable, still holding its slot, offline.
    expect((await patch(t, p.id, { data: { product_name: "B" } })).status).toBe(Status.DEACTIVATED);
    expect((await h.client.reactivatePassport({ id: p.id }, c)).passport!.status).toBe(Status.PUBLISHED);
    expect((await h.client.lockPassport({ id: p.id }, c)).passport!.status).toBe(Status.READONLY);
    expect((await refusal(patch(t, p.id, { data: { product_name: "C" } }))).code).toBe("wrong_status");
    expect((await refusal(h.client.unpublishPassport({ id: p.id }, c))).code).toBe("wrong_status");
    expect((await h.client.unlockPassport({ id: p.id }, c)).passport!.status).toBe(Status.PUBLISHED);
    expect((await events(t, p.id)).map((e) => e.type).slice(2)).toEqual([
      "passport.deactivated",
      "passport.updated",
      "passport.reactivated",
      "passport.locked",
      "passport.unlocked",
    ]);
  });

  it("answers resource_not_found for a passport of the other mode", async () => {
    const org = testTenant().organizationId;
    const p = await h.create(testTenant(org), { category: "textile" });
    const err = await refusal(h.client.trashPassport({ id: p.id }, { context: ctx(liveTenant(org)) }));
    expect(err.code).toBe("resource_not_found");
  });
});

describe("PublishPassport rules", () => {
  it("needs a GTIN (gtin_required) and every required field (validation_failed, required_for_publish)", async () => {
    const t = testTenant();
    const { gtin: _gtin, ...noGtin } = complete();
    const p = await h.create(t, { category: "textile", data: noGtin });
    const err = await refusal(publish(t, p.id));
    expect(err.code).toBe("gtin_required");
    const q = await h.create(t, { category: "textile", data: { product_name: "A", gtin: randomGtin13() } });
    const err2 = await refusal(publish(t, q.id));
    expect(err2.code).toBe("validation_failed");
    expect(
      (err2.details.issues as { source: { pointer: string }; rule: string }[]).map((i) => i.source.pointer),
    ).toContain("/data/manufacturer_name");
    expect((await h.client.getPassport({ id: q.id }, { context: ctx(t) })).passport!.status).toBe(
      Status.DRAFT,
    );
  });

  it("warns about environmental claims and still publishes", async () => {
    const t = testTenant();
    const p = await h.create(t, {
      category: "textile",
      data: {
        ...complete(),
        product_description: "Un t-shirt respectueux de l'environnement",
        recycled_content_percentage: 20,
      },
    });
    const res = await publish(t, p.id);
    expect(res.passport!.status).toBe(Status.PUBLISHED);
    expect(res.warnings.map((w) => [w.code, w.pointer])).toEqual([
      ["environmental_claim_detected", "/data/recycled_content_percentage"],
      ["environmental_claim_detected", "/data/product_description"],
    ]);
    expect(res.warnings[0]!.docUrl).toBe("https://docs.dpp.example/errors#environmental_claim_detected");
    const clean = await h.create(t, { category: "textile", data: complete() });
    expect((await publish(t, clean.id)).warnings).toEqual([]);
  });

  it("refuses beyond the plan's publish slots with publish_limit_reached; deactivated and readonly hold slots", async () => {
    const t = testTenant();
    const c = ctx(t, { plan: { ...PRO, publishLimit: 2 } });
    const [a, b, d] = await Promise.all(
      [1, 2, 3].map(() => h.create(t, { category: "textile", data: complete() })),
    );
    await publish(t, a!.id, c);
    await h.client.deactivatePassport({ id: a!.id }, { context: c });
    await publish(t, b!.id, c);
    await h.client.lockPassport({ id: b!.id }, { context: c });
    const err = await refusal(publish(t, d!.id, c));
    expect(err.code).toBe("publish_limit_reached");
    expect(err.status).toBe(402);
    expect(err.details).toMatchObject({ limit: 2, published_count: 2, plan_id: "pro" });
    expect((await h.client.getPassport({ id: d!.id }, { context: c })).passport!.status).toBe(Status.DRAFT);
    expect(await h.client.getUsage({}, { context: c })).toMatchObject({ publishedCount: 2 });
    await h.client.unpublishPassport({ id: a!.id }, { context: c });
    expect((await publish(t, d!.id, c)).passport!.status).toBe(Status.PUBLISHED);
  });

  it("takes the last publish slots once under concurrent publishes", async () => {
    const t = testTenant();
    const c = ctx(t, { plan: { ...PRO, publishLimit: 3 } });
    const drafts = await Promise.all(
      Array.from({ length: 8 }, () => h.create(t, { category: "textile", data: complete() })),
    );
    const outcomes = await Promise.all(
      drafts.map((d) =>
        publish(t, d.id, c).then(
          () => "published",
          (err: ApiError) => err.code,
        ),
      ),
    );
    expect(outcomes.filter((o) => o === "published")).toHaveLength(3);
    expect(outcomes.filter((o) => o === "publish_limit_reached")).toHaveLength(5);
    expect(await h.client.getUsage({}, { context: c })).toMatchObject({ publishedCount: 3 });
  });

  it("counts the publish slots used through every transition, per tenant, as the passports' statuses say", async () => {
    const org = testTenant().organizationId;
    const t = testTenant(org);
    const live = liveTenant(org);
    const c = ctx(t);
    /** Slots by the usage call, and by counting the tenant's passports in PUBLISH_SLOT_STATUSES. */
    const slots = async (tenant: Tenant) => {
      const { rows } = await sql<{ n: number }>`select count(*)::int as n from passport
        where organization_id = ${tenant.organizationId} and livemode = ${tenant.livemode}
          and status in (${sql.join([...PUBLISH_SLOT_STATUSES])})`.execute(h.sql);
      const usage = await h.client.getUsage({}, { context: ctx(tenant) });
      return [usage.publishedCount, rows[0]!.n];
    };
    const [a, b] = await Promise.all(
      [1, 2].map(() => h.create(t, { category: "textile", data: complete() })),
    );
    const other = await h.create(live, { category: "textile", data: complete() });
    expect(await slots(t)).toEqual([0, 0]);
    await publish(t, a!.id, c);
    await publish(t, b!.id, c);
    await publish(live, other.id, ctx(live));
    expect(await slots(t)).toEqual([2, 2]);
    expect(await slots(live)).toEqual([1, 1]);
    await h.client.deactivatePassport({ id: a!.id }, { context: c });
    await h.client.lockPassport({ id: b!.id }, { context: c });
    expect(await slots(t)).toEqual([2, 2]);
    await h.client.unlockPassport({ id: b!.id }, { context: c });
    await h.client.unpublishPassport({ id: b!.id }, { context: c });
    expect(await slots(t)).toEqual([1, 1]);
    await h.client.trashPassport({ id: b!.id }, { context: c });
    await h.client.restorePassport({ id: b!.id }, { context: c });
    await publish(t, b!.id, c);
    expect(await slots(t)).toEqual([2, 2]);
    // The test-mode retention deletes both: their slots are free again; the live tenant's stays.
    await sql`update passport set updated_at = now() - interval '91 days'
      where organization_id = ${org}`.execute(h.sql);
    await h.service.extra.retention.runOnce();
    expect(await slots(t)).toEqual([0, 0]);
    expect(await slots(live)).toEqual([1, 1]);
  });

  it("refuses live writes on a trial or unpaid plan, and never in test mode", async () => {
    const live = liveTenant();
    const trial = ctx(live, { plan: { planId: "trial", subscriptionStatus: "trialing", publishLimit: 3 } });
    const err = await refusal(h.client.createPassport({ category: "textile" }, { context: trial }));
    expect(err.code).toBe("no_subscription");
    const p = await h.create(live, { category: "textile", data: complete() });
    const overdue = ctx(live, { plan: { ...PRO, subscriptionStatus: "past_due" } });
    expect((await refusal(patch(live, p.id, { data: { product_name: "B" } }, { c: overdue }))).code).toBe(
      "payment_overdue",
    );
    expect((await refusal(publish(live, p.id, overdue))).code).toBe("payment_overdue");
    const active = ctx(live, { plan: { planId: "trial", subscriptionStatus: "active" } });
    expect((await refusal(publish(live, p.id, active))).code).toBe("plan_required");
    expect((await tenantRowCounts(h, live)).passport).toBe(1);
    const test = testTenant();
    const tp = await h.create(test, { category: "textile", data: complete() });
    const trialTest = ctx(test, {
      plan: { planId: "trial", subscriptionStatus: "trialing", publishLimit: 3 },
    });
    expect((await publish(test, tp.id, trialTest)).passport!.status).toBe(Status.PUBLISHED);
  });

  it("answers a connector that a person must approve, as a result, and publishes nothing", async () => {
    const t = testTenant();
    const p = await h.create(t, { category: "textile", data: complete() });
    const { outcome } = await publishOutcome(
      t,
      p.id,
      ctx(t, { credentialKind: "connector", keyId: "key_c" }),
    );
    if (outcome.case !== "approvalRequired")
      throw new Error(`expected an approval, got ${String(outcome.case)}`);
    const approval = outcome.value;
    expect(approval.passportId).toBe(p.id);
    expect(approval.approvalId).toMatch(/^pa_/);
    expect(approval.reviewUrl).toBe(
      `https://app.dpp.example/organizations/${t.organizationId}/publish-approvals/${approval.approvalId}`,
    );
    expect((await h.client.getPassport({ id: p.id }, { context: ctx(t) })).passport).toMatchObject({
      status: Status.DRAFT,
      version: 1,
    });
    const { rows } = await sql<{ n: number }>`select count(*)::int as n from publish_approval
      where organization_id = ${t.organizationId} and passport_id = ${p.id} and requested_by_key_id = 'key_c'`.execute(
      h.sql,
    );
    expect(rows[0]!.n).toBe(1);
  });
});

describe("ValidatePassport", () => {
  it("agrees with publish: publishable false with the reasons, true once fixed; dry runs are not kept", async () => {
    const t = testTenant();
    const p = await h.create(t, { category: "textile", data: { product_name: "An eco-friendly shirt" } });
    const v = (await h.client.validatePassport({ id: p.id, dryRun: true }, { context: ctx(t) })).validation!;
    expect(v).toMatchObject({
      valid: true,
      publishable: false,
      dryRun: true,
      category: "textile",
      schemaVersion: "2026-08-01",
    });
    const rules = v.issues.map((i) => [i.pointer, i.rule, Severity[i.severity]]);
    expect(rules).toEqual(
      expect.arrayContaining([
        ["/data/gtin", "gtin_required", "ERROR"],
        ["/data/manufacturer_name", "required_for_publish", "ERROR"],
        ["/data/product_name", "environmental_claim_detected", "WARNING"],
      ]),
    );
    expect(v.errorCount).toBe(v.issues.filter((i) => i.severity === Severity.ERROR).length);
    expect(v.warningCount).toBe(1);
    expect((await refusal(publish(t, p.id))).code).toBe("gtin_required");

    await patch(t, p.id, { data: complete() });
    const ok = (await h.client.validatePassport({ id: p.id }, { context: ctx(t) })).validation!;
    expect(ok).toMatchObject({ valid: true, publishable: true, errorCount: 0, dryRun: false });
    expect((await publish(t, p.id)).passport!.status).toBe(Status.PUBLISHED);
    const after = (await h.client.validatePassport({ id: p.id }, { context: ctx(t) })).validation!;
    expect(after.publishable).toBe(false);
    expect(after.issues).toEqual([expect.objectContaining({ pointer: "/status", rule: "wrong_status" })]);
    const { rows } = await sql<{
      n: number;
    }>`select count(*)::int as n from validation where passport_id = ${p.id}`.execute(h.sql);
    expect(rows[0]!.n).toBe(2);
  });
});

describe("GetPassportLinks", () => {
  it("answers links with the configured hosts and the reasons it does not resolve", async () => {
    const t = testTenant();
    const g = randomGtin13();
    const p = await h.create(t, { category: "textile", data: { gtin: g } });
    const { links } = await h.client.getPassportLinks({ id: p.id }, { context: ctx(t) });
    expect(links).toMatchObject({
      publicUrl: `https://passports.dpp.example/p/${p.id}`,
      qrTarget: `https://id.dpp.example/01/0${g}`,
      resolvesPublicly: false,
      notResolvableReason: "test_mode",
      gs1DigitalLink: {
        uri: `https://id.dpp.example/01/0${g}`,
        gtin14: `0${g}`,
        linksetUrl: `https://id.dpp.example/01/0${g}?linkType=linkset`,
      },
    });
    const none = await h.create(t, { category: "textile" });
    expect(
      (await h.client.getPassportLinks({ id: none.id }, { context: ctx(t) })).links!.gs1DigitalLink,
    ).toMatchObject({
      unavailableReason: "gtin_missing",
    });
  });
});

describe("ClaimGtins / ReleaseGtins", () => {
  it("claims variant GTINs all or none, idempotently per owner; allows the passport's own lead", async () => {
    const t = testTenant();
    const lead = randomGtin13();
    const p = await h.create(t, { category: "textile", data: { product_name: "Tee", gtin: lead } });
    const other = await h.create(t, {
      category: "textile",
      data: { product_name: "Other tee", gtin: randomGtin13() },
    });
    const [g1, g2] = [randomGtin13(), randomGtin13()];
    const c = { context: ctx(t) };
    const res = await h.client.claimGtins(
      {
        claims: [
          { gtin: g1, passportId: p.id, ownerId: "var_1" },
          { gtin: lead, passportId: p.id, ownerId: "var_2" },
        ],
      },
      c,
    );
    // Both held; the passport's own lead GTIN is named as such (it stays the lead's claim).
    expect(res.heldCount).toBe(2);
    expect(res.leadGtins).toEqual([`0${lead}`]);
    // Same owner again: fine. Another passport: refused, and g2 of that batch is not claimed.
    await h.client.claimGtins({ claims: [{ gtin: g1, passportId: p.id, ownerId: "var_1" }] }, c);
    const err = await refusal(
      h.client.claimGtins(
        {
          claims: [
            { gtin: g2, passportId: other.id, ownerId: "var_9" },
            { gtin: g1, passportId: other.id, ownerId: "var_9" },
          ],
        },
        c,
      ),
    );
    expect(err.code).toBe("gtin_in_use");
    expect(err.details).toMatchObject({
      gtin: `0${g1}`,
      product_name: "Tee",
      role: "variant",
      passport_id: p.id,
    });
    // Nothing of the refused batch was claimed: g2 is still free.
    expect((await patch(t, other.id, { data: { gtin: g2 } })).gtin).toBe(`0${g2}`);
    const rel = await h.client.releaseGtins(
      {
        releases: [
          { gtin: g1, ownerId: "var_1" },
          { gtin: g2, ownerId: "var_9" },
          { gtin: lead, ownerId: "var_2" },
        ],
      },
      c,
    );
    expect(rel.released).toEqual([`0${g1}`]);
    expect(rel.absent).toEqual([`0${g2}`, `0${lead}`]);
    const bad = await refusal(
      h.client.claimGtins({ claims: [{ gtin: "123", passportId: p.id, ownerId: "v" }] }, c),
    );
    expect(bad.details.issues).toEqual([expect.objectContaining({ source: { pointer: "/claims/0/gtin" } })]);
  });
});

describe("test-mode retention", () => {
  it("deletes test passports 90 days after their last edit, with their GTIN claims, and emits passport.deleted", async () => {
    const org = testTenant().organizationId;
    const t = testTenant(org);
    const live = liveTenant(org);
    const old = await h.create(t, { category: "textile", data: { gtin: randomGtin13() } });
    const recent = await h.create(t, { category: "textile" });
    const oldLive = await h.create(live, { category: "textile" });
    await sql`update passport set updated_at = now() - interval '91 days' where id in (${old.id}, ${oldLive.id})`.execute(
      h.sql,
    );
    await sql`update passport set updated_at = now() - interval '89 days' where id = ${recent.id}`.execute(
      h.sql,
    );
    await h.service.extra.retention.runOnce();
    const ids = (await h.list(t)).passports.map((p) => p.id);
    expect(ids).toEqual([recent.id]);
    expect((await h.list(live)).passports.map((p) => p.id)).toEqual([oldLive.id]);
    expect((await tenantRowCounts(h, t)).gtin_claim).toBe(0);
    expect((await events(t, old.id)).map((e) => e.type)).toEqual(["passport.created", "passport.deleted"]);
  });
});
