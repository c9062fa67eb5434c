/** The passport service on its own: create, get, tenant isolation, uniqueness, GTIN claims, validation. */
import { passportV1, timestampDate } from "@dpp/proto";
import {
  context,
  createRequest,
  liveTenant,
  randomGtin13,
  refusal,
  startHarness,
  tenantRowCounts,
  testTenant,
  type CreateBody,
  type Harness,
} from "../harness";

let h: Harness;

beforeAll(async () => {
  h = await startHarness("passport_crud");
});
afterAll(() => h?.close());

const issuesOf = (details: Record<string, unknown>) =>
  (details.issues as { source: { pointer?: string; parameter?: string }; rule: string }[]).map((i) => [
    i.source.pointer ?? i.source.parameter,
    i.rule,
  ]);

describe("createPassport", () => {
  it("creates a draft at version 1 with the GTIN normalised to 14 digits", async () => {
    const t = testTenant();
    const gtin = randomGtin13();
    const p = await h.create(t, {
      category: "textile",
      external_id: "SKU-1",
      data: { product_name: "Organic T-shirt", gtin, manufacturer_country: "PT" },
    });
    expect(p).toMatchObject({
      organizationId: t.organizationId,
      livemode: false,
      category: "textile",
      status: passportV1.PassportStatus.DRAFT,
      version: 1,
      gtin: `0${gtin}`,
      externalId: "SKU-1",
    });
    expect(p.id).toMatch(/^pp_/);
    expect(p.registryId).toBeUndefined();
    expect(p.publishedAt).toBeUndefined();
    expect(p.trashedAt).toBeUndefined();
    // Millisecond precision, as the spec's timestamps have.
    expect(p.createdAt!.nanos % 1_000_000).toBe(0);
    expect(Math.abs(timestampDate(p.createdAt!).getTime() - Date.now())).toBeLessThan(60_000);
    expect(p.updatedAt).toEqual(p.createdAt);
    expect(JSON.parse(p.dataJson)).toEqual({
      product_name: "Organic T-shirt",
      gtin: `0${gtin}`,
      manufacturer_country: "PT",
    });
  });

  it("creates a passport without external_id or data, with gtin absent", async () => {
    const p = await h.create(testTenant(), { category: "general" });
    expect(p).toMatchObject({ category: "general", status: passportV1.PassportStatus.DRAFT, version: 1 });
    expect(p.gtin).toBeUndefined();
    expect(p.externalId).toBeUndefined();
    expect(JSON.parse(p.dataJson)).toEqual({});
  });

  it("refuses a call that carries no tenant context as configuration_error", async () => {
    const err = await refusal(
      h.client.createPassport({ category: "textile" }, { context: { requestId: "req_no_tenant" } }),
    );
    expect(err.code).toBe("configuration_error");
    expect(err.status).toBe(500);
  });

  it("refuses data that is not JSON as invalid_request", async () => {
    const err = await refusal(
      h.client.createPassport({ category: "textile", dataJson: "{nope" }, { context: context(testTenant()) }),
    );
    expect(err.code).toBe("invalid_request");
  });
});

describe("validate_only", () => {
  it("answers what a create would refuse, and writes nothing either way", async () => {
    const t = testTenant();
    const check = (body: CreateBody) =>
      h.client.createPassport({ ...createRequest(body), validateOnly: true }, { context: context(t) });
    const ok = await check({ category: "textile", external_id: "V-1", data: { product_name: "x" } });
    expect(ok.passport).toBeUndefined();
    const err = await refusal(check({ category: "textile", external_id: "", data: { nope: 1 } }));
    expect(err.code).toBe("validation_failed");
    expect(issuesOf(err.details)).toEqual([
      ["/external_id", "length"],
      ["/data/nope", "unknown_field"],
    ]);
    expect(await tenantRowCounts(h, t)).toEqual({ passport: 0, gtin_claim: 0, outbox: 0 });
  });

  it("refuses a live write the plan does not allow before looking at the fields", async () => {
    const err = await refusal(
      h.client.createPassport(
        { category: "spaceship", validateOnly: true },
        { context: { ...context(liveTenant()), plan: { planId: "pro", subscriptionStatus: "past_due" } } },
      ),
    );
    expect(err.code).toBe("payment_overdue");
  });
});

describe("getPassport and tenant isolation", () => {
  const owner = testTenant();
  let id: string;

  beforeAll(async () => {
    id = (await h.create(owner, { category: "textile", data: { product_name: "Mine" } })).id;
  });

  it("reads the passport back as created", async () => {
    const res = await h.client.getPassport({ id }, { context: context(owner) });
    expect(res.passport).toMatchObject({
      id,
      organizationId: owner.organizationId,
      status: passportV1.PassportStatus.DRAFT,
      version: 1,
    });
    expect(JSON.parse(res.passport!.dataJson)).toEqual({ product_name: "Mine" });
  });

  it("answers resource_not_found to another organization and to the other mode", async () => {
    for (const t of [testTenant(), liveTenant(owner.organizationId)]) {
      const err = await refusal(h.client.getPassport({ id }, { context: context(t) }));
      expect(err.code).toBe("resource_not_found");
      expect(err.details).toEqual({ passport_id: id });
    }
  });

  it("answers resource_not_found for an unknown or overlong id", async () => {
    for (const unknown of ["pp_doesnotexist", "x".repeat(300)]) {
      const err = await refusal(h.client.getPassport({ id: unknown }, { context: context(owner) }));
      expect(err.code).toBe("resource_not_found");
    }
  });

  it("lists nothing of another tenant", async () => {
    expect((await h.list(testTenant())).passports).toEqual([]);
    expect((await h.list(liveTenant(owner.organizationId))).passports).toEqual([]);
    expect((await h.list(owner)).passports.map((p) => p.id)).toEqual([id]);
  });
});

describe("external_id", () => {
  it("is unique per organization and mode, allowed once in each mode", async () => {
    const t = testTenant();
    const first = await h.create(t, { category: "textile", external_id: "EXT-1" });

    const before = await tenantRowCounts(h, t);
    const err = await refusal(h.create(t, { category: "general", external_id: "EXT-1" }));
    expect(err.code).toBe("already_exists");
    expect(err.status).toBe(409);
    expect(err.details).toMatchObject({ external_id: "EXT-1", passport_id: first.id });
    expect(issuesOf(err.details)).toEqual([["/external_id", "unique"]]);
    expect(await tenantRowCounts(h, t)).toEqual(before);

    const live = await h.create(liveTenant(t.organizationId), { category: "textile", external_id: "EXT-1" });
    expect(live.livemode).toBe(true);
    expect(live.externalId).toBe("EXT-1");
    const err2 = await refusal(
      h.create(liveTenant(t.organizationId), { category: "textile", external_id: "EXT-1" }),
    );
    expect(err2.details.passport_id).toBe(live.id);

    // Another organization may use the same value.
    await expect(
      h.create(testTenant(), { category: "textile", external_id: "EXT-1" }),
    ).resolves.toBeDefined();
  });
});

describe("GTIN claims", () => {
  it("refuses a GTIN another passport leads, naming it, and writes nothing", async () => {
    const t = testTenant();
    const gtin = randomGtin13();
    const holder = await h.create(t, { category: "textile", data: { product_name: "Holder", gtin } });
    const before = await tenantRowCounts(h, t);
    expect(before).toEqual({ passport: 1, gtin_claim: 1, outbox: 1 });

    // The same GTIN in its 14-digit form is the same GTIN.
    for (const sent of [gtin, `0${gtin}`]) {
      const err = await refusal(
        h.create(t, {
          category: "general",
          external_id: "NEW",
          data: { product_name: "Newcomer", gtin: sent },
        }),
      );
      expect(err.code).toBe("gtin_in_use");
      expect(err.status).toBe(409);
      expect(err.details).toMatchObject({
        gtin: `0${gtin}`,
        passport_id: holder.id,
        passport: `organizations/${t.organizationId}/passports/${holder.id}`,
        product_name: "Holder",
        role: "lead",
      });
      expect(issuesOf(err.details)).toEqual([["/data/gtin", "gtin_in_use"]]);
    }

    // Nothing of the refused creates was stored: no passport, no claim, no event.
    expect(await tenantRowCounts(h, t)).toEqual(before);
    const newcomers = await h.sql
      .selectFrom("passport")
      .select("id")
      .where("organization_id", "=", t.organizationId)
      .where("external_id", "=", "NEW")
      .execute();
    expect(newcomers).toEqual([]);

    // The claim is per tenant: the other mode and another organization may use the GTIN.
    await expect(
      h.create(liveTenant(t.organizationId), { category: "textile", data: { gtin } }),
    ).resolves.toMatchObject({
      gtin: `0${gtin}`,
    });
    await expect(h.create(testTenant(), { category: "textile", data: { gtin } })).resolves.toBeDefined();
  });

  it("stores one lead claim owned by the passport", async () => {
    const t = testTenant();
    const gtin = randomGtin13();
    const p = await h.create(t, { category: "battery", data: { gtin } });
    const claims = await h.sql
      .selectFrom("gtin_claim")
      .select(["gtin", "passport_id", "role", "owner_id"])
      .where("organization_id", "=", t.organizationId)
      .where("livemode", "=", false)
      .execute();
    expect(claims).toEqual([{ gtin: `0${gtin}`, passport_id: p.id, role: "lead", owner_id: p.id }]);
  });
});

describe("concurrent creates", () => {
  it("let exactly one of several racing creates take a GTIN or an external_id", async () => {
    const t = testTenant();
    const gtin = randomGtin13();
    const gtinRace = await Promise.allSettled(
      Array.from({ length: 6 }, (_, i) =>
        h.create(t, { category: "textile", data: { product_name: `P${i}`, gtin } }),
      ),
    );
    const winners = gtinRace.filter((r) => r.status === "fulfilled");
    expect(winners).toHaveLength(1);
    const winner = (winners[0] as PromiseFulfilledResult<{ id: string }>).value;
    for (const r of gtinRace.filter((x) => x.status === "rejected"))
      expect((r as PromiseRejectedResult).reason).toMatchObject({
        code: "gtin_in_use",
        details: expect.objectContaining({ passport_id: winner.id, role: "lead" }),
      });

    const idRace = await Promise.allSettled(
      Array.from({ length: 6 }, () => h.create(t, { category: "general", external_id: "RACE" })),
    );
    expect(idRace.filter((r) => r.status === "fulfilled")).toHaveLength(1);
    for (const r of idRace.filter((x) => x.status === "rejected"))
      expect((r as PromiseRejectedResult).reason).toMatchObject({ code: "already_exists" });

    expect(await tenantRowCounts(h, t)).toEqual({ passport: 2, gtin_claim: 1, outbox: 2 });
  });
});

describe("validation_failed", () => {
  async function refused(body: CreateBody) {
    const t = testTenant();
    const err = await refusal(h.create(t, body));
    expect(err.code).toBe("validation_failed");
    expect(err.status).toBe(422);
    expect(await tenantRowCounts(h, t)).toEqual({ passport: 0, gtin_claim: 0, outbox: 0 });
    return issuesOf(err.details);
  }

  it("points at unknown data keys", async () => {
    expect(
      await refused({ category: "textile", data: { product_name: "x", colour_of_the_day: "red" } }),
    ).toEqual([["/data/colour_of_the_day", "unknown_field"]]);
  });

  it("escapes JSON Pointer tokens of unknown keys", async () => {
    expect(await refused({ category: "textile", data: { "a/b~c": 1 } })).toEqual([
      ["/data/a~1b~0c", "unknown_field"],
    ]);
  });

  // The body's shape (unknown members, category missing or not a string, external_id not a string, data not an
  // object) is the gateway's to check: its tests, and test-e2e/passports.e2e.test.ts for a refusal that lists
  // the issues of both.
  it("requires a known category", async () => {
    expect(await refused({ category: "spaceship" })).toEqual([["/category", "unknown_category"]]);
    expect(await refused({ category: "" })).toEqual([["/category", "unknown_category"]]);
  });

  it("limits external_id to 1..255 characters", async () => {
    expect(await refused({ category: "textile", external_id: "x".repeat(256) })).toEqual([
      ["/external_id", "length"],
    ]);
    expect(await refused({ category: "textile", external_id: "" })).toEqual([["/external_id", "length"]]);
    const ok = await h.create(testTenant(), { category: "textile", external_id: "x".repeat(255) });
    expect(ok.externalId).toHaveLength(255);
  });

  it("counts external_id in Unicode code points: 255 emoji are accepted, 256 refused", async () => {
    // Each emoji is one code point and two UTF-16 units.
    const emoji = (n: number) => "\u{1F642}".repeat(n);
    const t = testTenant();
    const ok = await h.create(t, { category: "textile", external_id: emoji(255) });
    expect(ok.externalId).toBe(emoji(255));
    expect([...ok.externalId!]).toHaveLength(255);
    const mixed = await h.create(t, { category: "textile", external_id: `${"x".repeat(254)}\u{1F642}` });
    expect(mixed.externalId).toBe(`${"x".repeat(254)}\u{1F642}`);
    expect(await refused({ category: "textile", external_id: emoji(256) })).toEqual([
      ["/external_id", "length"],
    ]);
  });

  it("lists every issue of the fields at once, in the order of the body's members", async () => {
    const issues = await refused({ category: "textile", external_id: "", data: { nope: 1, gtin: "123" } });
    expect(issues[0]).toEqual(["/external_id", "length"]);
    expect(issues).toEqual(
      expect.arrayContaining([
        ["/data/nope", "unknown_field"],
        ["/data/gtin", "pattern"],
      ]),
    );
  });

  it("answers an unknown key of 200,000 characters with its name cut to 200 and an ellipsis, and says so", async () => {
    const name = "k".repeat(200_000);
    const err = await refusal(h.create(testTenant(), { category: "textile", data: { [name]: 1 } }));
    const cut = `${"k".repeat(200)}\u2026`;
    expect(err.details).toEqual({
      issues: [
        {
          source: { pointer: `/data/${cut}` },
          rule: "unknown_field",
          message: `Unknown field "${cut}": the textile field schema does not define it.`,
          pointer_truncated: true,
        },
      ],
    });
    expect(err.message).toBe(`The request body failed validation (1 issue at /data/${cut}).`);
  });

  it("lists the first 100 of 400 unknown keys and counts them all", async () => {
    const data = Object.fromEntries(Array.from({ length: 400 }, (_, i) => [`${i}_${"€".repeat(300)}`, i]));
    const err = await refusal(h.create(testTenant(), { category: "textile", data }));
    expect(err.code).toBe("validation_failed");
    expect(issuesOf(err.details)).toEqual(
      Array.from({ length: 100 }, (_, i) => [
        `/data/${`${i}_${"€".repeat(300)}`.slice(0, 200)}\u2026`,
        "unknown_field",
      ]),
    );
    expect([err.details.issues_truncated, err.details.total_issues]).toEqual([true, 400]);
  });

  it("refuses data that is not an object", async () => {
    const err = await refusal(
      h.client.createPassport({ category: "textile", dataJson: "[1]" }, { context: context(testTenant()) }),
    );
    expect(issuesOf(err.details)).toEqual([["/data", "type"]]);
  });

  it("refuses a GTIN with a wrong check digit", async () => {
    const gtin = randomGtin13();
    const wrong = gtin.slice(0, 12) + String((Number(gtin[12]) + 1) % 10);
    expect(await refused({ category: "textile", data: { gtin: wrong } })).toEqual([
      ["/data/gtin", "gtin_check_digit"],
    ]);
  });
});

describe("categories", () => {
  it("lists the categories without a tenant", async () => {
    const res = await h.client.listCategories({}, { context: context() });
    const ids = res.categories.map((c) => c.id);
    expect(ids).toEqual(expect.arrayContaining(["textile", "battery", "general"]));
    for (const c of res.categories) {
      expect(c.displayName).not.toBe("");
      expect(c.schemaVersion).toMatch(/^\d{4}-\d{2}-\d{2}$/);
      expect(c.regulations.length).toBeGreaterThan(0);
    }
  });

  it("serves a category's field schema", async () => {
    const res = await h.client.getCategorySchema({ category: "textile" }, { context: context() });
    expect(res.category?.id).toBe("textile");
    const schema = JSON.parse(res.schemaJson);
    expect(schema).toMatchObject({ type: "object", additionalProperties: false });
    expect(schema.$id).toContain(`/textile/${res.category!.schemaVersion}`);
    expect(Object.keys(schema.properties)).toEqual(expect.arrayContaining(["product_name", "gtin"]));
  });

  it("answers resource_not_found for an unknown category", async () => {
    const err = await refusal(h.client.getCategorySchema({ category: "spaceship" }, { context: context() }));
    expect(err.code).toBe("resource_not_found");
    expect(err.details).toEqual({ category: "spaceship" });
  });
});
