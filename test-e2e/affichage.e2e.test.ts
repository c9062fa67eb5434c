/**
 * French affichage filing through the API, against the portal simulator (its own process, speaking the
 * portal's API: the real portal cannot be reached from here). Every refusal of POST .../affichage, the
 * portal's behaviours (slow, down, records then times out, already declared, refuses the delegation), and the
 * promise that a retry never files twice, checked in the simulator's own record of declarations.
 */
import { envelope, KEY_CACHE_BOUND_MS, startHarness, type Harness, type Tenant } from "./support/harness";
import { startPortalSimulatorProcess, type PortalSimulatorProcess } from "./support/portal-simulator";
import { publishableTextile } from "./support/fixtures";

jest.setTimeout(180_000);

let h: Harness;
let sim: PortalSimulatorProcess;
let t: Tenant;
const BRAND = "portal-brand-acme";

beforeAll(async () => {
  sim = await startPortalSimulatorProcess();
  h = await startHarness("affichage", {
    env: { PORTAL_BASE_URL: sim.url, PORTAL_API_KEY: sim.apiKey, PORTAL_TIMEOUT_MS: "1000" },
  });
  t = await h.tenant("Acme", "pro");
});
afterAll(async () => {
  await h?.close();
  await sim?.stop();
});

/** A valid GTIN-13 (as its GTIN-14 form is kept) from a 12-digit stem, with its check digit. */
function gtin13(stem12: string): string {
  let sum = 0;
  for (let i = 0; i < 12; i++) sum += (stem12.charCodeAt(11 - i) - 48) * (i % 2 === 0 ? 3 : 1);
  return stem12 + ((10 - (sum % 10)) % 10);
}
let stem = 400638100000;
const nextGtin = () => gtin13(String(stem++));

const base = () => `/organizations/${t.organizationId}/passports`;

async function publishedPassport(key: string, gtin: string, mass = 180): Promise<string> {
  const created = await h.request(base(), {
    key,
    body: {
      category: "textile",
      data: publishableTextile({ product_mass: { value: mass, unit: "g" }, gtin }),
    },
  });
  h.expectStatus(created, 201);
  const pub = await h.request(`${base()}/${created.body.id}/publish`, { key, method: "POST" });
  h.expectStatus(pub, 200);
  return created.body.id as string;
}

const file = (id: string, key: string | null = t.liveKey, idem?: string) =>
  h.request(`${base()}/${id}/affichage`, {
    key,
    method: "POST",
    headers: idem ? { "idempotency-key": idem } : {},
  });
const read = (id: string, key = t.liveKey) => h.request(`${base()}/${id}/affichage`, { key });

async function attest() {
  const { runAdmin } = await import("@dpp/admin");
  process.env.FILINGS_ADDR = h.stack.services.filings.address;
  process.env.INTERNAL_AUTH_PRIVATE_KEY = h.stack.adminKey;
  try {
    return (await runAdmin(
      ["org:attest", "--org", t.organizationId, "--mode", "live", "--by", "Camille Martin"],
      "/nonexistent",
    )) as any;
  } finally {
    delete process.env.FILINGS_ADDR;
    delete process.env.INTERNAL_AUTH_PRIVATE_KEY;
  }
}

/** The organization's delegation, set through the admin CLI's own command (`npm run admin -- org:delegation`). */
async function delegate(status: string, portalBrandId?: string) {
  const { runAdmin } = await import("@dpp/admin");
  process.env.DATABASE_URL = h.db.url;
  try {
    return (await runAdmin(
      [
        "org:delegation",
        "--org",
        t.organizationId,
        "--status",
        status,
        ...(portalBrandId ? ["--portal-brand-id", portalBrandId] : []),
      ],
      "/nonexistent",
    )) as any;
  } finally {
    delete process.env.DATABASE_URL;
  }
}

/** The france_affichage_filing capability as the key's mode sees it. */
async function capability(key = t.liveKey) {
  const res = await h.request(`/organizations/${t.organizationId}/capabilities`, { key });
  h.expectStatus(res, 200);
  return res.body.data.find((c: any) => c.id === "france_affichage_filing");
}
const problemCodes = (cap: any) => cap.problems.map((p: any) => p.code);

/** The gateway hands filings (and the capabilities) the organization it cached, at most this long. */
const cacheBound = () => new Promise((r) => setTimeout(r, KEY_CACHE_BOUND_MS + 200));

describe("before the organization can file", () => {
  it("reads not_filed with its blockers, and refuses each missing condition with its code", async () => {
    const id = await publishedPassport(t.liveKey, nextGtin());
    const before = await read(id);
    h.expectStatus(before, 200);
    expect(before.body).toEqual({
      object: "affichage",
      name: `organizations/${t.organizationId}/passports/${id}/affichage`,
      organization_id: t.organizationId,
      passport_id: id,
      livemode: true,
      status: "not_filed",
      filed_at: null,
      portal_gtin: null,
      portal_score: null,
      filing_available: false,
      blockers: ["attestation_required", "delegation_required"],
      delegation_status: "none",
    });

    // The capability says the same: nothing delegated, nobody attested, so the API cannot file.
    const initial = await capability();
    expect(initial).toMatchObject({ allowed: false, verification_status: "invalid", requested: false });
    expect(initial.detail).toEqual({
      delegation_status: "none",
      portal_brand_id: null,
      delegated_at: null,
      entitlement: "included",
      free_filing_reason: null,
      per_passport_requirements: ["gtin_required", "attestation_required"],
      attestation_wording_version: "2026-01",
      per_passport_check: `/v1/organizations/${t.organizationId}/passports/{id}/affichage`,
      api_filing_supported: false,
      api_filing_scope: "filings:write",
    });
    expect(problemCodes(initial)).toEqual(["delegation_required", "attestation_required"]);

    // No attestation yet.
    const noAttestation = await file(id, t.liveKey, "k-att");
    expect(noAttestation.status).toBe(403);
    expect(envelope(noAttestation)).toMatchObject({ code: "attestation_required" });

    const attested = await attest();
    expect(attested).toMatchObject({
      accepted_by: "Camille Martin",
      wording_version: "2026-01",
      livemode: true,
    });

    const attestedCap = await capability();
    expect(attestedCap.detail).toMatchObject({
      per_passport_requirements: ["gtin_required"],
      api_filing_supported: false,
    });
    expect(problemCodes(attestedCap)).toEqual(["delegation_required"]);
    // The attestation is the live mode's: test mode still lacks it (and never files).
    expect((await capability(t.testKey)).detail.per_passport_requirements).toEqual([
      "gtin_required",
      "attestation_required",
    ]);

    // An active delegation must name the brand on the portal: the admin CLI refuses one without it.
    await expect(delegate("active")).rejects.toMatchObject({ code: "validation_failed" });

    // The delegation is only pending.
    expect(await delegate("pending", BRAND)).toMatchObject({
      affichage_delegation_status: "pending",
      affichage_portal_brand_id: BRAND,
      affichage_delegated_at: null,
    });
    await cacheBound();
    const pendingCap = await capability();
    expect(pendingCap).toMatchObject({ allowed: false, verification_status: "pending", requested: true });
    expect(pendingCap.detail).toMatchObject({
      delegation_status: "pending",
      portal_brand_id: BRAND,
      delegated_at: null,
      api_filing_supported: false,
    });
    expect(problemCodes(pendingCap)).toEqual(["delegation_pending"]);
    const pending = await file(id, t.liveKey, "k-pending");
    expect(pending.status).toBe(403);
    expect(envelope(pending)).toMatchObject({
      code: "delegation_required",
      details: { delegation_status: "pending", checked: "record" },
    });
    expect((await read(id)).body.blockers).toEqual(["delegation_required"]);
    expect(await sim.declarations(id)).toEqual([]);
  });
});

describe("filing", () => {
  let delegatedAt: string;
  beforeAll(async () => {
    const delegated = await delegate("active", BRAND);
    delegatedAt = delegated.affichage_delegated_at;
    expect(Date.parse(delegatedAt)).toBeGreaterThan(Date.now() - 60_000);
    await sim.authorize([BRAND]);
    await cacheBound();
    await sim.behave("normal");
  });

  it("refuses test mode, a draft, a GTIN-14 without a GTIN-13 form, and a passport without a GTIN", async () => {
    const testId = await publishedPassport(t.testKey, nextGtin());
    const test = await file(testId, t.testKey, "k-test");
    expect(test.status).toBe(403);
    expect(envelope(test)).toMatchObject({ code: "test_mode_refused" });
    // The test mode's capability says so.
    const testCap = await capability(t.testKey);
    expect(testCap).toMatchObject({ livemode: false, allowed: false });
    expect(testCap.detail.api_filing_supported).toBe(false);
    expect(problemCodes(testCap)).toContain("test_mode_refused");
    expect((await read(testId, t.testKey)).body.blockers).toContain("test_mode_refused");

    const draft = await h.request(base(), { key: t.liveKey, body: { category: "textile", data: {} } });
    const wrong = await file(draft.body.id, t.liveKey, "k-draft");
    expect(wrong.status).toBe(409);
    expect(envelope(wrong)).toMatchObject({
      code: "wrong_status",
      details: { status: "draft", allowed_statuses: ["published"] },
    });

    // Indicator digit 1: a case of several items, which the portal cannot take.
    const case14 = "1" + nextGtin();
    let sum = 0;
    for (let i = 0; i < 13; i++) sum += (case14.charCodeAt(12 - i) - 48) * (i % 2 === 0 ? 3 : 1);
    const gtin14 = case14.slice(0, 13) + ((10 - (sum % 10)) % 10);
    const caseId = await publishedPassport(t.liveKey, gtin14);
    const noGtin13 = await file(caseId, t.liveKey, "k-gtin14");
    expect(noGtin13.status).toBe(422);
    expect(envelope(noGtin13)).toMatchObject({
      code: "gtin_required",
      details: { reason: "no_gtin13_form", gtin: gtin14 },
    });
    expect((await read(caseId)).body.blockers).toEqual(["gtin_required"]);

    // A published passport whose GTIN was removed since.
    const gone = await publishedPassport(t.liveKey, nextGtin());
    const removed = await h.request(`${base()}/${gone}`, {
      key: t.liveKey,
      method: "PATCH",
      headers: { "if-match": "*" },
      body: { data: { gtin: null } },
    });
    h.expectStatus(removed, 200);
    expect(removed.body).toMatchObject({ status: "published", gtin: null });
    const noGtin = await file(gone, t.liveKey, "k-no-gtin");
    expect(noGtin.status).toBe(422);
    expect(envelope(noGtin)).toMatchObject({ code: "gtin_required", details: { passport_id: gone } });
    expect((await read(gone)).body.blockers).toEqual(["gtin_required"]);
    expect(await sim.declarations(gone)).toEqual([]);
  });

  it("files once, answers the score the portal computed, and a repeat changes nothing", async () => {
    // Delegated (through the admin CLI), attested, a paid plan: the capability says the API files, and it does.
    const cap = await capability();
    expect(cap).toMatchObject({ allowed: true, verification_status: "valid", problems: [] });
    expect(cap.detail).toMatchObject({
      delegation_status: "active",
      portal_brand_id: BRAND,
      delegated_at: delegatedAt,
      entitlement: "included",
      free_filing_reason: null,
      per_passport_requirements: ["gtin_required"],
      api_filing_supported: true,
    });
    const gtin = nextGtin();
    const id = await publishedPassport(t.liveKey, gtin);
    expect((await read(id)).body).toMatchObject({
      filing_available: true,
      blockers: [],
      delegation_status: "active",
    });

    // The passport keeps the GTIN-14 form; the portal is given (and answers) its GTIN-13 form.
    expect((await h.request(`${base()}/${id}`, { key: t.liveKey })).body.gtin).toBe(`0${gtin}`);
    const res = await file(id, t.liveKey, "k-file-1");
    h.expectStatus(res, 200);
    const portal = await sim.product(gtin);
    expect(portal.status).toBe(200);
    expect(res.body).toMatchObject({
      object: "affichage",
      passport_id: id,
      livemode: true,
      changed: true,
      unchanged_reason: null,
      status: "filed",
      portal_gtin: gtin,
      portal_score: portal.body.score,
      standardized_score: portal.body.standardized,
      durability: portal.body.durability,
      engine_version: `engine ${portal.body.upload.version}`,
      declared_score: null,
      free_offer: false,
    });
    expect(res.body.engine_version).toContain("simulated");
    expect(res.body.official_label_url).toBe(`${sim.url}/image?type=score&gtin=${gtin}`);
    expect(await sim.declarations(id)).toHaveLength(1);

    // The same key replays the answer; the portal is not called again.
    const replay = await file(id, t.liveKey, "k-file-1");
    expect(replay.status).toBe(200);
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    expect(replay.body).toEqual(res.body);

    // A new key: nothing changed.
    const again = await file(id, t.liveKey, "k-file-2");
    h.expectStatus(again, 200);
    expect(again.body).toMatchObject({
      changed: false,
      unchanged_reason: "already_filed",
      portal_score: res.body.portal_score,
    });
    expect(await sim.declarations(id)).toHaveLength(1);

    const after = await read(id);
    expect(after.body).toMatchObject({
      status: "filed",
      filed_at: res.body.filed_at,
      portal_gtin: gtin,
      portal_score: res.body.portal_score,
    });

    // One affichage.filed event in the feed.
    let filed: any[] = [];
    for (let i = 0; i < 50 && filed.length === 0; i++) {
      const feed = await h.request(`/organizations/${t.organizationId}/events?limit=100`, { key: t.liveKey });
      filed = feed.body.data.filter((e: any) => e.type === "affichage.filed" && e.related.passport_id === id);
      if (filed.length === 0) await new Promise((r) => setTimeout(r, 100));
    }
    expect(filed).toHaveLength(1);
    expect(filed[0].related).toEqual({
      object: "affichage",
      name: `organizations/${t.organizationId}/passports/${id}/affichage`,
      passport_id: id,
      status: "filed",
      portal_gtin: gtin,
    });
  });

  it("files and reads through the SDK's typed methods", async () => {
    const gtin = nextGtin();
    const id = await publishedPassport(t.liveKey, gtin, 250);
    const affichage = h.sdk(t.liveKey).organization(t.organizationId).affichage;
    const before = await affichage.get(id);
    expect(before).toMatchObject({ status: "not_filed", filing_available: true });
    const filed = await affichage.file(id, { idempotencyKey: "sdk-file-1" });
    expect(filed).toMatchObject({ changed: true, status: "filed", portal_gtin: gtin });
    expect(filed.lastResponse.status).toBe(200);
    const after = await affichage.get(id);
    expect(after).toMatchObject({ status: "filed", portal_score: filed.portal_score });
    expect(await sim.declarations(id)).toHaveLength(1);
  });

  it("calls the portal once when the same key races itself", async () => {
    const id = await publishedPassport(t.liveKey, nextGtin());
    const answers = await Promise.all([1, 2, 3].map(() => file(id, t.liveKey, "k-race")));
    for (const a of answers) expect([200, 409]).toContain(a.status);
    for (const a of answers.filter((x) => x.status === 409)) expect(envelope(a).code).toBe("resource_busy");
    expect(answers.some((a) => a.status === 200)).toBe(true);
    expect(await sim.declarations(id)).toHaveLength(1);
  });

  it("after the portal recorded the declaration and timed out, the same key replays 502 and a new key files nothing twice", async () => {
    const gtin = nextGtin();
    const id = await publishedPassport(t.liveKey, gtin);
    await sim.behave("record_then_timeout");
    try {
      const lost = await file(id, t.liveKey, "k-lost-1");
      expect(lost.status).toBe(502);
      expect(envelope(lost)).toMatchObject({ code: "portal_unavailable", details: { passport_id: id } });
      // The portal did record it.
      expect(await sim.declarations(id)).toHaveLength(1);

      const replay = await file(id, t.liveKey, "k-lost-1");
      expect(replay.status).toBe(502);
      expect(replay.headers.get("idempotent-replayed")).toBe("true");
      // The recorded answer, its original request id included.
      expect(replay.body).toEqual(lost.body);
      expect((await read(id)).body.status).toBe("not_filed");
    } finally {
      await sim.behave("normal");
    }
    // A new key: the service asks the portal first, finds the declaration and does not file again.
    const retry = await file(id, t.liveKey, "k-lost-2");
    h.expectStatus(retry, 200);
    expect(retry.body).toMatchObject({ changed: true, status: "filed", portal_gtin: gtin });
    expect(await sim.declarations(id)).toHaveLength(1);
    expect((await read(id)).body.status).toBe("filed");
  });

  it("a new key while the portal still times out on declarations asks the portal first and does not declare again", async () => {
    const gtin = nextGtin();
    const id = await publishedPassport(t.liveKey, gtin);
    await sim.behave("record_then_timeout");
    try {
      const lost = await file(id, t.liveKey, "k-still-1");
      expect(lost.status).toBe(502);
      expect(envelope(lost).code).toBe("portal_unavailable");
      expect(await sim.declarations(id)).toHaveLength(1);
      // Declarations still time out, reads answer: a second declaration would time out too (502). The service
      // reads the portal's record first, finds the declaration and files nothing.
      const retry = await file(id, t.liveKey, "k-still-2");
      h.expectStatus(retry, 200);
      expect(retry.body).toMatchObject({ changed: true, status: "filed", portal_gtin: gtin });
      const portal = await sim.product(gtin);
      expect(retry.body.portal_score).toBe(portal.body.score);
    } finally {
      await sim.behave("normal");
    }
    expect(await sim.declarations(id)).toHaveLength(1);
    // Filed now: a further key changes nothing and declares nothing.
    const again = await file(id, t.liveKey, "k-still-3");
    expect(again.body).toMatchObject({ changed: false, unchanged_reason: "already_filed" });
    expect(await sim.declarations(id)).toHaveLength(1);
  });

  it.each(["slow", "down"] as const)(
    "answers portal_unavailable when the portal is %s, and files on a new key once it is back",
    async (behaviour) => {
      const id = await publishedPassport(t.liveKey, nextGtin());
      await sim.behave(behaviour);
      try {
        const res = await file(id, t.liveKey, `k-${behaviour}-1`);
        expect(res.status).toBe(502);
        expect(envelope(res)).toMatchObject({ code: "portal_unavailable" });
      } finally {
        await sim.behave("normal");
      }
      expect(await sim.declarations(id)).toHaveLength(0);
      const same = await file(id, t.liveKey, `k-${behaviour}-1`);
      expect(same.status).toBe(502);
      const retry = await file(id, t.liveKey, `k-${behaviour}-2`);
      h.expectStatus(retry, 200);
      expect(retry.body.changed).toBe(true);
      expect(await sim.declarations(id)).toHaveLength(1);
    },
  );

  it("answers changed false when the portal says the declaration already exists", async () => {
    const id = await publishedPassport(t.liveKey, nextGtin(), 200);
    h.expectStatus(await file(id, t.liveKey, "k-dup-1"), 200);
    const patched = await h.request(`${base()}/${id}`, {
      key: t.liveKey,
      method: "PATCH",
      headers: { "if-match": "*" },
      body: { data: { product_mass: { value: 210, unit: "g" } } },
    });
    h.expectStatus(patched, 200);
    await sim.behave("already_declared");
    try {
      const res = await file(id, t.liveKey, "k-dup-2");
      h.expectStatus(res, 200);
      expect(res.body).toMatchObject({ changed: false, unchanged_reason: "portal_already_declared" });
    } finally {
      await sim.behave("normal");
    }
    expect(await sim.declarations(id)).toHaveLength(1);
    // With the portal answering normally, the changed declaration is filed.
    const changed = await file(id, t.liveKey, "k-dup-3");
    expect(changed.body).toMatchObject({ changed: true, unchanged_reason: null });
    expect(await sim.declarations(id)).toHaveLength(2);
  });

  it("checks the delegation against the portal at call time", async () => {
    const id = await publishedPassport(t.liveKey, nextGtin());
    await sim.behave("delegation_refused");
    try {
      const res = await file(id, t.liveKey, "k-deleg");
      expect(res.status).toBe(403);
      expect(envelope(res)).toMatchObject({
        code: "delegation_required",
        details: { checked: "portal", portal_brand_id: BRAND },
      });
    } finally {
      await sim.behave("normal");
    }
    expect(await sim.declarations(id)).toHaveLength(0);
  });

  it("refuses entitlement_unavailable with Retry-After while the subscription is past due", async () => {
    const id = await publishedPassport(t.liveKey, nextGtin());
    await h.admin.setPlan(t.organizationId, "pro", "past_due");
    // The gateway's cache of the key and its plan lasts at most this long.
    await new Promise((r) => setTimeout(r, KEY_CACHE_BOUND_MS + 200));
    try {
      const cap = await capability();
      expect(cap.detail).toMatchObject({ entitlement: "unavailable", api_filing_supported: false });
      expect(problemCodes(cap)).toContain("payment_overdue");
      const res = await file(id, t.liveKey, "k-ent");
      expect(res.status).toBe(503);
      expect(res.headers.get("retry-after")).toBe("60");
      expect(envelope(res)).toMatchObject({
        code: "entitlement_unavailable",
        details: { subscription_status: "past_due" },
      });
    } finally {
      await h.admin.setPlan(t.organizationId, "pro", "active");
    }
    expect(await sim.declarations(id)).toHaveLength(0);
    await new Promise((r) => setTimeout(r, KEY_CACHE_BOUND_MS + 200));
  });

  it("a revoked delegation turns api_filing_supported off and filing is refused; delegated again, it files", async () => {
    const id = await publishedPassport(t.liveKey, nextGtin());
    expect(await delegate("revoked", BRAND)).toMatchObject({ affichage_delegation_status: "revoked" });
    await cacheBound();
    try {
      const cap = await capability();
      expect(cap).toMatchObject({ allowed: false, verification_status: "invalid" });
      expect(cap.detail).toMatchObject({
        delegation_status: "revoked",
        delegated_at: null,
        api_filing_supported: false,
      });
      expect(problemCodes(cap)).toEqual(["delegation_required"]);
      expect((await read(id)).body).toMatchObject({
        filing_available: false,
        blockers: ["delegation_required"],
        delegation_status: "revoked",
      });
      const refused = await file(id, t.liveKey, "k-revoked");
      expect(refused.status).toBe(403);
      expect(envelope(refused)).toMatchObject({
        code: "delegation_required",
        details: { delegation_status: "revoked", checked: "record" },
      });
      expect(await sim.declarations(id)).toEqual([]);
    } finally {
      await delegate("active", BRAND);
      await cacheBound();
    }
    const cap = await capability();
    expect(cap.detail).toMatchObject({ delegation_status: "active", api_filing_supported: true });
    expect(Date.parse(cap.detail.delegated_at)).toBeGreaterThan(Date.parse(delegatedAt));
    const filed = await file(id, t.liveKey, "k-redelegated");
    h.expectStatus(filed, 200);
    expect(filed.body.changed).toBe(true);
    expect(await sim.declarations(id)).toHaveLength(1);
  });

  it("describes the same state in the capability detail", async () => {
    const res = await h.request(`/organizations/${t.organizationId}/capabilities`, { key: t.liveKey });
    h.expectStatus(res, 200);
    const cap = res.body.data.find((c: any) => c.id === "france_affichage_filing");
    expect(cap).toMatchObject({
      allowed: true,
      verification_status: "valid",
      detail: {
        delegation_status: "active",
        portal_brand_id: BRAND,
        entitlement: "included",
        per_passport_requirements: ["gtin_required"],
        attestation_wording_version: "2026-01",
        per_passport_check: `/v1/organizations/${t.organizationId}/passports/{id}/affichage`,
        api_filing_supported: true,
        api_filing_scope: "filings:write",
      },
    });
  });
});
