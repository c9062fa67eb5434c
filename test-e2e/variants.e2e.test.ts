/**
 * Variants through the API (spec: Variants; docs/decisions/0051-variants-and-units.md): the batch rules, the
 * organization's GTIN namespace shared with passports, removal and its replays, the destructive-operation cap,
 * connector keys and the review fingerprint. Every answer is checked against the OpenAPI document by the harness.
 * The removal batches are 2 GTINs here and the second batch of a removal fails (fault injection), so that a
 * removal whose later batch fails can be shown; the other removals send at most 2 GTINs.
 */
import { envelope, startHarness, type Harness, type Tenant } from "./support/harness";
import { publishableTextile } from "./support/fixtures";

jest.setTimeout(240_000);

let h: Harness;
let t: Tenant;

beforeAll(async () => {
  h = await startHarness("variants", {
    env: { VARIANTS_REMOVAL_BATCH: "2", VARIANTS_REMOVAL_FAIL_BATCH: "2" },
  });
  t = await h.tenant("Acme", "pro");
});
afterAll(async () => {
  await h?.close();
});

/** A valid GTIN-13 from a 12-digit body: the GS1 check digit appended. */
function gtin13(body: number): string {
  const digits = String(body).padStart(12, "0");
  let sum = 0;
  for (let i = 0; i < 12; i++) sum += Number(digits[11 - i]) * (i % 2 === 0 ? 3 : 1);
  return digits + String((10 - (sum % 10)) % 10);
}
let next = 400_000_000_000 + Math.floor(Math.random() * 1_000_000) * 1000;
const freshGtin = () => gtin13(next++);

const base = (tn: Tenant) => `/organizations/${tn.organizationId}/passports`;

async function passport(
  tn: Tenant,
  category: string,
  data: Record<string, unknown> = {},
  key = tn.testKey,
): Promise<string> {
  const res = await h.request(base(tn), { key, body: { category, data } });
  h.expectStatus(res, 201);
  return res.body.id as string;
}

const variants = (tn: Tenant, id: string) => `${base(tn)}/${id}/variants`;

function pointers(res: { body: any }): string[] {
  return (envelope(res as any).details.issues as { source: { pointer: string } }[]).map(
    (i) => i.source.pointer,
  );
}

describe("POST .../variants", () => {
  it("adds a batch in request order, GTINs as 14 digits, sizes and colours trimmed, and lists them", async () => {
    const id = await passport(t, "textile", { product_name: "Tee" });
    const res = await h.request(variants(t, id), {
      key: t.testKey,
      body: {
        variants: [
          { gtin: "96385074", size: "  S ", colour: "Red" },
          { gtin: "036000291452", size: "M" },
          { gtin: "4006381333931", colour: " Blue" },
          { gtin: "10012345678902", size: "L", colour: "Red" },
        ],
      },
    });
    h.expectStatus(res, 201);
    expect(res.body.data.map((v: any) => [v.gtin, v.size, v.colour])).toEqual([
      ["00000096385074", "S", "Red"],
      ["00036000291452", "M", null],
      ["04006381333931", null, "Blue"],
      ["10012345678902", "L", "Red"],
    ]);
    const v = res.body.data[0];
    expect(v).toMatchObject({
      object: "variant",
      name: `organizations/${t.organizationId}/passports/${id}/variants/${v.id}`,
      organization_id: t.organizationId,
      passport_id: id,
      passport: `organizations/${t.organizationId}/passports/${id}`,
      livemode: false,
      agent_written: null,
    });

    // The gtin filter normalises its argument; a page at a time in the order added.
    const one = await h.request(`${variants(t, id)}?gtin=4006381333931`, { key: t.testKey });
    h.expectStatus(one, 200);
    expect(one.body.data.map((x: any) => x.gtin)).toEqual(["04006381333931"]);
    const bad = await h.request(`${variants(t, id)}?gtin=4006381333932`, { key: t.testKey });
    expect([bad.status, envelope(bad).code]).toEqual([400, "invalid_request"]);
    const p1 = await h.request(`${variants(t, id)}?limit=3`, { key: t.testKey });
    expect([p1.body.data.length, p1.body.has_more]).toEqual([3, true]);
    const p2 = await h.request(`${variants(t, id)}?limit=3&cursor=${p1.body.next_cursor}`, {
      key: t.testKey,
    });
    expect(p2.body.data.map((x: any) => x.gtin)).toEqual(["10012345678902"]);
    expect([p2.body.has_more, p2.body.next_cursor]).toEqual([false, null]);
    const other = await h.request(`${variants(t, id)}?gtin=96385074&cursor=${p1.body.next_cursor}`, {
      key: t.testKey,
    });
    expect(envelope(other).code).toBe("cursor_invalid");

    // Each variant has its event in the feed.
    const feed = await h.request(`/organizations/${t.organizationId}/events?type=variant.created&limit=100`, {
      key: t.testKey,
    });
    h.expectStatus(feed, 200);
    expect(
      feed.body.data.filter((e: any) => e.related.passport_id === id).map((e: any) => e.related.gtin),
    ).toEqual(res.body.data.map((x: any) => x.gtin));
  });

  it("refuses a batch with a pointer per offending item, and such a refusal does not consume the key", async () => {
    const id = await passport(t, "textile");
    const long = "x".repeat(71);
    const emojis = "👕".repeat(70);
    const res = await h.request(variants(t, id), {
      key: t.testKey,
      headers: { "Idempotency-Key": "batch-rules" },
      body: {
        variants: [
          { gtin: "4006381333932", size: "S" },
          { gtin: "12345", size: "S2" },
          { gtin: freshGtin(), size: long },
          { gtin: freshGtin(), size: "   " },
          { gtin: freshGtin() },
          { gtin: "96385074", size: "dup" },
          { gtin: "00000096385074", size: "dup2" },
          { gtin: freshGtin(), size: "M", colour: "red" },
          { gtin: freshGtin(), size: "m", colour: "RED" },
          { gtin: freshGtin(), size: emojis },
        ],
      },
    });
    expect([res.status, envelope(res).code]).toEqual([422, "validation_failed"]);
    expect(pointers(res)).toEqual([
      "/variants/0/gtin",
      "/variants/1/gtin",
      "/variants/2/size",
      "/variants/3/size",
      "/variants/4",
      "/variants/6/gtin",
      "/variants/8",
    ]);
    for (const body of [
      { variants: [] },
      { variants: Array.from({ length: 1001 }, () => ({ gtin: "96385074" })) },
    ]) {
      const r = await h.request(variants(t, id), { key: t.testKey, body });
      expect([r.status, pointers(r)]).toEqual([422, ["/variants"]]);
    }
    const typed = await h.request(variants(t, id), {
      key: t.testKey,
      body: { variants: [{ gtin: 123, x: 1 }] },
    });
    expect([typed.status, pointers(typed)]).toEqual([422, ["/variants/0/x", "/variants/0/gtin"]]);

    // The same key with a corrected body: accepted.
    const ok = await h.request(variants(t, id), {
      key: t.testKey,
      headers: { "Idempotency-Key": "batch-rules" },
      body: { variants: [{ gtin: freshGtin(), size: emojis }] },
    });
    h.expectStatus(ok, 201);
    expect(ok.body.data[0].size).toBe(emojis);
  });

  it("refuses pairs and GTINs the passport already has, case-insensitively, and adds nothing of the batch", async () => {
    const id = await passport(t, "general");
    const g = freshGtin();
    h.expectStatus(
      await h.request(variants(t, id), {
        key: t.testKey,
        body: { variants: [{ gtin: g, size: "XL", colour: "Navy" }] },
      }),
      201,
    );
    const res = await h.request(variants(t, id), {
      key: t.testKey,
      body: {
        variants: [
          { gtin: freshGtin(), size: "S" },
          { gtin: freshGtin(), size: "xl", colour: "NAVY" },
          { gtin: g, size: "XS" },
        ],
      },
    });
    expect([res.status, envelope(res).code]).toEqual([409, "already_exists"]);
    expect(pointers(res)).toEqual(["/variants/1", "/variants/2/gtin"]);
    const list = await h.request(variants(t, id), { key: t.testKey });
    expect(list.body.data).toHaveLength(1);
  });

  it("shares one GTIN namespace with passports: lead and variant GTINs of other passports, trashed included", async () => {
    const lead = freshGtin();
    const holder = await passport(t, "textile", { product_name: "Holder", gtin: lead });
    const id = await passport(t, "textile", { product_name: "Mine", gtin: freshGtin() });
    const own = (await h.request(`${base(t)}/${id}`, { key: t.testKey })).body.gtin as string;

    const taken = await h.request(variants(t, id), {
      key: t.testKey,
      body: {
        variants: [
          { gtin: own, size: "S" },
          { gtin: lead, size: "M" },
        ],
      },
    });
    expect([taken.status, envelope(taken).code]).toEqual([409, "gtin_in_use"]);
    expect(envelope(taken).details).toMatchObject({
      passport: `organizations/${t.organizationId}/passports/${holder}`,
      product_name: "Holder",
      role: "lead",
    });
    expect(pointers(taken)).toEqual(["/variants/1/gtin"]);

    // The passport's own lead GTIN is allowed as one of its variants.
    const v = freshGtin();
    h.expectStatus(
      await h.request(variants(t, id), {
        key: t.testKey,
        body: {
          variants: [
            { gtin: own, size: "S" },
            { gtin: v, size: "M" },
          ],
        },
      }),
      201,
    );
    // A passport taking a variant's GTIN is refused, on create and on patch.
    const created = await h.request(base(t), {
      key: t.testKey,
      body: { category: "textile", data: { gtin: v } },
    });
    expect([created.status, envelope(created).code]).toEqual([409, "gtin_in_use"]);
    expect(envelope(created).details).toMatchObject({
      passport: `organizations/${t.organizationId}/passports/${id}`,
      product_name: "Mine",
      role: "variant",
    });
    const patched = await h.request(`${base(t)}/${holder}`, {
      key: t.testKey,
      method: "PATCH",
      body: { data: { gtin: v } },
    });
    expect([patched.status, envelope(patched).code]).toEqual([409, "gtin_in_use"]);

    // A trashed passport keeps its GTINs.
    h.expectStatus(await h.request(`${base(t)}/${holder}/trash`, { key: t.testKey, method: "POST" }), 200);
    const again = await h.request(variants(t, id), {
      key: t.testKey,
      body: { variants: [{ gtin: lead, size: "L" }] },
    });
    expect([again.status, envelope(again).code]).toEqual([409, "gtin_in_use"]);

    // Another mode is another namespace.
    const live = await passport(t, "textile", {}, t.liveKey);
    h.expectStatus(
      await h.request(variants(t, live), { key: t.liveKey, body: { variants: [{ gtin: lead, size: "S" }] } }),
      201,
    );
  });

  it("refuses a passport that cannot change (trashed), before the batch's own conflicts, and an unknown passport", async () => {
    const id = await passport(t, "textile");
    const gtin = freshGtin();
    h.expectStatus(
      await h.request(variants(t, id), { key: t.testKey, body: { variants: [{ gtin, size: "S" }] } }),
      201,
    );
    h.expectStatus(await h.request(`${base(t)}/${id}/trash`, { key: t.testKey, method: "POST" }), 200);
    // A batch that conflicts with the stored rows, and one that does not: the passport's status refuses both.
    for (const variant of [
      { gtin, size: "S" },
      { gtin: freshGtin(), size: "M" },
    ]) {
      const refused = await h.request(variants(t, id), { key: t.testKey, body: { variants: [variant] } });
      expect([refused.status, envelope(refused).code]).toEqual([409, "wrong_status"]);
      expect(envelope(refused).details).toMatchObject({
        status: "trashed",
        allowed_statuses: ["draft", "published", "deactivated"],
      });
    }
    // Nothing was claimed: the fresh GTIN of the refused batch is free for another passport.
    const free = freshGtin();
    const other = await passport(t, "textile");
    expect(
      (await h.request(variants(t, id), { key: t.testKey, body: { variants: [{ gtin: free, size: "L" }] } }))
        .status,
    ).toBe(409);
    h.expectStatus(
      await h.request(variants(t, other), {
        key: t.testKey,
        body: { variants: [{ gtin: free, size: "L" }] },
      }),
      201,
    );

    const unknown = await h.request(variants(t, "pp_0000000000000000000000none"), {
      key: t.testKey,
      body: { variants: [{ gtin: freshGtin(), size: "S" }] },
    });
    expect([unknown.status, envelope(unknown).code]).toEqual([404, "resource_not_found"]);
  });

  it("refuses battery passports, and at most 2000 variants per passport", async () => {
    const battery = await passport(t, "battery");
    const refused = await h.request(variants(t, battery), {
      key: t.testKey,
      body: { variants: [{ gtin: freshGtin(), size: "S" }] },
    });
    expect([refused.status, envelope(refused).code, envelope(refused).details.reason]).toEqual([
      400,
      "invalid_request",
      "category_without_variants",
    ]);

    const id = await passport(t, "textile");
    for (let k = 0; k < 2; k++) {
      const r = await h.request(variants(t, id), {
        key: t.testKey,
        body: {
          variants: Array.from({ length: 1000 }, (_, i) => ({ gtin: freshGtin(), size: `S${k}-${i}` })),
        },
      });
      h.expectStatus(r, 201);
    }
    const over = await h.request(variants(t, id), {
      key: t.testKey,
      body: { variants: [{ gtin: freshGtin(), size: "one more" }] },
    });
    expect([over.status, envelope(over).code, envelope(over).details]).toEqual([
      422,
      "variant_limit_reached",
      { limit: 2000, current: 2000, requested: 1 },
    ]);
  });

  it("replays a keyed create before new conflict checks", async () => {
    const id = await passport(t, "textile");
    const body = { variants: [{ gtin: freshGtin(), size: "S" }] };
    const headers = { "Idempotency-Key": "create-replay" };
    const first = await h.request(variants(t, id), { key: t.testKey, headers, body });
    h.expectStatus(first, 201);
    const again = await h.request(variants(t, id), { key: t.testKey, headers, body });
    expect([again.status, again.headers.get("idempotent-replayed")]).toEqual([201, "true"]);
    expect(again.body.data[0].id).toBe(first.body.data[0].id);
    const unkeyed = await h.request(variants(t, id), { key: t.testKey, body });
    expect(envelope(unkeyed).code).toBe("already_exists");
  });
});

describe("removal", () => {
  it("removes present GTINs, lists absent ones, and replays with the key or reports absent without", async () => {
    const id = await passport(t, "textile");
    const [a, b] = [freshGtin(), freshGtin()];
    h.expectStatus(
      await h.request(variants(t, id), {
        key: t.testKey,
        body: {
          variants: [
            { gtin: a, size: "S" },
            { gtin: b, size: "M" },
          ],
        },
      }),
      201,
    );
    const headers = { "Idempotency-Key": "remove-once" };
    const body = { gtins: [`0${a}`, freshGtin()] };
    const first = await h.request(`${variants(t, id)}/remove`, { key: t.testKey, headers, body });
    h.expectStatus(first, 200);
    expect(first.body).toEqual({
      object: "variant_removal",
      removed: [`0${a}`],
      absent: [`0${body.gtins[1]}`],
    });
    const replay = await h.request(`${variants(t, id)}/remove`, { key: t.testKey, headers, body });
    expect([replay.status, replay.headers.get("idempotent-replayed"), replay.body]).toEqual([
      200,
      "true",
      first.body,
    ]);
    const unkeyed = await h.request(`${variants(t, id)}/remove`, { key: t.testKey, body });
    expect(unkeyed.body).toEqual({
      object: "variant_removal",
      removed: [],
      absent: [`0${a}`, `0${body.gtins[1]}`],
    });
    // The released GTIN is free again for another passport.
    const other = await passport(t, "textile");
    h.expectStatus(
      await h.request(variants(t, other), { key: t.testKey, body: { variants: [{ gtin: a, size: "S" }] } }),
      201,
    );

    const bad = await h.request(`${variants(t, id)}/remove`, { key: t.testKey, body: { gtins: ["123", b] } });
    expect([bad.status, pointers(bad)]).toEqual([422, ["/gtins/0"]]);
  });

  it("reports the removals of the batches before a failed one, replays that failure with the key, and finishes without", async () => {
    const id = await passport(t, "textile");
    const gtins = [freshGtin(), freshGtin(), freshGtin(), freshGtin()];
    h.expectStatus(
      await h.request(variants(t, id), {
        key: t.testKey,
        body: { variants: gtins.map((gtin, i) => ({ gtin, size: `S${i}` })) },
      }),
      201,
    );
    const headers = { "Idempotency-Key": "remove-fails" };
    const failed = await h.request(`${variants(t, id)}/remove`, { key: t.testKey, headers, body: { gtins } });
    expect([failed.status, envelope(failed).code]).toEqual([500, "internal_error"]);
    const removed = gtins.slice(0, 2).map((g) => `0${g}`);
    expect(envelope(failed).details).toMatchObject({ reason: "removal_batch_failed", batch: 2, removed });
    const replay = await h.request(`${variants(t, id)}/remove`, { key: t.testKey, headers, body: { gtins } });
    // A replay repeats the first answer, its request_id included.
    expect([
      replay.status,
      replay.headers.get("idempotent-replayed"),
      replay.body.error.details.removed,
    ]).toEqual([500, "true", removed]);
    expect(replay.body.error.request_id).toBe(failed.body.error.request_id);
    // Without a key (and, in this test, at most one batch): the rest.
    const rest = await h.request(`${variants(t, id)}/remove`, {
      key: t.testKey,
      body: { gtins: gtins.slice(2) },
    });
    expect(rest.body.removed).toEqual(gtins.slice(2).map((g) => `0${g}`));
    const left = await h.request(variants(t, id), { key: t.testKey });
    expect(left.body.data).toEqual([]);
  });

  it("counts removals from published passports toward the plan's daily cap, once per effective call", async () => {
    const trial = await h.tenant("Trial brand", "trial");
    const id = await passport(trial, "textile", publishableTextile({ gtin: freshGtin() }));
    const gtins = Array.from({ length: 22 }, () => freshGtin());
    h.expectStatus(
      await h.request(variants(trial, id), {
        key: trial.testKey,
        body: { variants: gtins.map((gtin, i) => ({ gtin, size: `S${i}` })) },
      }),
      201,
    );
    h.expectStatus(
      await h.request(`${base(trial)}/${id}/publish`, { key: trial.testKey, method: "POST" }),
      200,
    );
    // An absent GTIN removes nothing and is not counted.
    const none = await h.request(`${variants(trial, id)}/remove`, {
      key: trial.testKey,
      body: { gtins: [freshGtin()] },
    });
    h.expectStatus(none, 200);
    const list = await h.request(`${variants(trial, id)}?limit=100`, { key: trial.testKey });
    for (let i = 0; i < 20; i++) {
      const r =
        i % 2 === 0
          ? await h.request(`${variants(trial, id)}/remove`, {
              key: trial.testKey,
              body: { gtins: [gtins[i]] },
            })
          : await h.request(`${variants(trial, id)}/${list.body.data[i].id}`, {
              key: trial.testKey,
              method: "DELETE",
            });
      h.expectStatus(r, 200);
    }
    const capped = await h.request(`${variants(trial, id)}/remove`, {
      key: trial.testKey,
      body: { gtins: [gtins[20]] },
    });
    expect([capped.status, envelope(capped).code]).toEqual([429, "rate_limited"]);
    expect(envelope(capped).details).toMatchObject({ reason: "destructive_operation_cap", limit: 20 });
    expect(Number(capped.headers.get("retry-after"))).toBeGreaterThan(0);
    // Nothing was removed by the refused call.
    const still = await h.request(`${variants(trial, id)}?gtin=${gtins[20]}`, { key: trial.testKey });
    expect(still.body.data).toHaveLength(1);
  });

  it("deletes one variant by id", async () => {
    const id = await passport(t, "textile");
    const res = await h.request(variants(t, id), {
      key: t.testKey,
      body: { variants: [{ gtin: freshGtin(), size: "S" }] },
    });
    const vid = res.body.data[0].id as string;
    const del = await h.request(`${variants(t, id)}/${vid}`, { key: t.testKey, method: "DELETE" });
    expect([del.status, del.body]).toEqual([200, { object: "variant", id: vid, deleted: true }]);
    const again = await h.request(`${variants(t, id)}/${vid}`, { key: t.testKey, method: "DELETE" });
    expect([again.status, envelope(again).code]).toEqual([404, "resource_not_found"]);
  });
});

describe("connector keys and the review", () => {
  it("marks a connector's variants, limits it to drafts and never lets it remove; the fingerprint follows the rows", async () => {
    const connector = await h.admin.createKey({
      organizationId: t.organizationId,
      livemode: false,
      kind: "connector",
    });
    const id = await passport(t, "textile", { product_name: "Reviewed" });
    const added = await h.request(variants(t, id), {
      key: connector.key,
      body: {
        variants: [
          { gtin: freshGtin(), size: "S" },
          { gtin: freshGtin(), size: "M" },
        ],
      },
    });
    h.expectStatus(added, 201);
    expect(added.body.data[0].agent_written).toMatchObject({
      keyId: connector.record.id,
      keyName: connector.record.name,
      sourceClass: "agent_asserted",
    });

    const review = await h.request(`${variants(t, id)}/review`, { key: t.testKey });
    h.expectStatus(review, 200);
    expect(review.body).toMatchObject({
      object: "variant_review",
      passport: `organizations/${t.organizationId}/passports/${id}`,
      agent_written_count: 2,
    });
    expect(review.body.fingerprint).toMatch(/^[0-9a-f]{64}$/);
    const same = await h.request(`${variants(t, id)}/review`, { key: t.testKey });
    expect(same.body.fingerprint).toBe(review.body.fingerprint);
    h.expectStatus(
      await h.request(variants(t, id), {
        key: t.testKey,
        body: { variants: [{ gtin: freshGtin(), size: "L" }] },
      }),
      201,
    );
    const changed = await h.request(`${variants(t, id)}/review`, { key: t.testKey });
    expect(changed.body.fingerprint).not.toBe(review.body.fingerprint);
    expect(changed.body.agent_written_count).toBe(2);

    const vid = added.body.data[0].id as string;
    for (const r of [
      await h.request(`${variants(t, id)}/remove`, {
        key: connector.key,
        body: { gtins: [added.body.data[0].gtin] },
      }),
      await h.request(`${variants(t, id)}/${vid}`, { key: connector.key, method: "DELETE" }),
    ]) {
      expect([r.status, envelope(r).code]).toEqual([409, "connector_writes_drafts_only"]);
      expect(envelope(r).details.review_url).toEqual(expect.any(String));
    }

    const published = await passport(t, "textile", publishableTextile({ gtin: freshGtin() }));
    h.expectStatus(
      await h.request(`${base(t)}/${published}/publish`, { key: t.testKey, method: "POST" }),
      200,
    );
    const refused = await h.request(variants(t, published), {
      key: connector.key,
      body: { variants: [{ gtin: freshGtin(), size: "S" }] },
    });
    expect([refused.status, envelope(refused).code]).toEqual([409, "connector_writes_drafts_only"]);
    expect(envelope(refused).details.review_url).toContain(`/passports/${published}/variants/review`);
  });
});

describe("publishing a passport with assistant-written variants", () => {
  it("needs the current review fingerprint: required without one, changed with a stale one, published with it", async () => {
    const connector = await h.admin.createKey({
      organizationId: t.organizationId,
      livemode: false,
      kind: "connector",
    });
    const id = await passport(t, "textile", publishableTextile({ gtin: freshGtin() }));
    const publishUrl = `${base(t)}/${id}/publish`;
    h.expectStatus(
      await h.request(variants(t, id), {
        key: connector.key,
        body: {
          variants: [
            { gtin: freshGtin(), size: "S" },
            { gtin: freshGtin(), size: "M" },
          ],
        },
      }),
      201,
    );
    const reviewUrl = `/organizations/${t.organizationId}/passports/${id}/variants/review`;

    // No fingerprint: a person must review first.
    const required = await h.request(publishUrl, { key: t.testKey, method: "POST" });
    expect([required.status, envelope(required).code]).toEqual([409, "variant_review_required"]);
    expect(envelope(required).details).toMatchObject({ passport_id: id, agent_written_count: 2 });
    // The review page (REVIEW_BASE_URL: the gateway's /review in the local stack), where a person reviews them.
    expect(envelope(required).details.review_url).toMatch(new RegExp(`^https?://[^/]+/review${reviewUrl}$`));
    // A connector's publish is refused the same way before any approval is recorded.
    const byConnector = await h.request(publishUrl, { key: connector.key, method: "POST" });
    expect([byConnector.status, envelope(byConnector).code]).toEqual([409, "variant_review_required"]);

    // The fingerprint of a review, then a row added: the review is stale.
    const first = await h.request(`${variants(t, id)}/review`, { key: t.testKey });
    h.expectStatus(first, 200);
    h.expectStatus(
      await h.request(variants(t, id), {
        key: t.testKey,
        body: { variants: [{ gtin: freshGtin(), size: "L" }] },
      }),
      201,
    );
    const changed = await h.request(publishUrl, {
      key: t.testKey,
      body: { variant_review_fingerprint: first.body.fingerprint },
    });
    expect([changed.status, envelope(changed).code]).toEqual([409, "variant_review_changed"]);
    expect(envelope(changed).details).toMatchObject({ passport_id: id, agent_written_count: 2 });
    expect((await h.request(`${base(t)}/${id}`, { key: t.testKey })).body.status).toBe("draft");

    // The current fingerprint publishes.
    const current = await h.request(`${variants(t, id)}/review`, { key: t.testKey });
    expect(current.body.fingerprint).not.toBe(first.body.fingerprint);
    const published = await h.request(publishUrl, {
      key: t.testKey,
      body: { variant_review_fingerprint: current.body.fingerprint },
    });
    h.expectStatus(published, 200);
    expect(published.body.status).toBe("published");
  });

  it("publishes a passport whose variants a person wrote without any fingerprint", async () => {
    const id = await passport(t, "textile", publishableTextile({ gtin: freshGtin() }));
    h.expectStatus(
      await h.request(variants(t, id), {
        key: t.testKey,
        body: { variants: [{ gtin: freshGtin(), colour: "Red" }] },
      }),
      201,
    );
    const published = await h.request(`${base(t)}/${id}/publish`, { key: t.testKey, method: "POST" });
    h.expectStatus(published, 200);
  });
});
