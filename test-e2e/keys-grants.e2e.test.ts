/**
 * Key lifecycle, grants across organizations and capabilities, through HTTP
 * (spec: Authentication, Organizations and grants, Capability; decisions 0002, 0010).
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { sql } from "kysely";
import {
  envelope,
  startHarness,
  untilRefused,
  untilSeen,
  type Harness,
  type Tenant,
} from "./support/harness";

let h: Harness;
let agency: Tenant;
let brand: Tenant;
const shownKeys: string[] = [];

beforeAll(async () => {
  h = await startHarness("e2e_keys");
  agency = await h.tenant("Agency", "pro");
  brand = await h.tenant("Brand", "starter");
  shownKeys.push(agency.testKey, agency.liveKey, brand.testKey, brand.liveKey);
});
afterAll(() => h?.close());

const whoami = (key: string) => h.request("/whoami", { key });
const grants = (org: string) => `/organizations/${org}/grants`;

describe("key lifecycle", () => {
  it("refuses a revoked key within the documented bound, even after it was cached", async () => {
    const k = await h.admin.createKey({ organizationId: agency.organizationId, livemode: false });
    shownKeys.push(k.key);
    for (let i = 0; i < 3; i++) expect((await whoami(k.key)).status).toBe(200); // now cached
    await h.admin.revokeKey(k.record.id);
    const res = await untilRefused(() => whoami(k.key));
    expect(res.status).toBe(401);
    expect(envelope(res).code).toBe("key_revoked");
  });

  it("rotates with an overlap window: both keys work, then the old one is key_rotated", async () => {
    const k = await h.admin.createKey({ organizationId: agency.organizationId, livemode: false });
    const rotated = await h.admin.rotateKey(k.record.id, 3600);
    shownKeys.push(k.key, rotated.key);
    expect((await whoami(k.key)).status).toBe(200);
    expect((await whoami(rotated.key)).body.key_id).toBe(rotated.record.id);
    // Close the window (as time would).
    await sql`update gateway.api_key set rotation_overlap_ends_at = now() - interval '1 second' where id = ${k.record.id}`.execute(
      h.gatewayDb,
    );
    // A raw update sends no change notification: a cached record may serve until its TTL ends (the bound).
    const res = await untilRefused(() => whoami(k.key));
    expect(envelope(res)).toMatchObject({
      code: "key_rotated",
      details: { replaced_by_key_id: rotated.record.id },
    });
    expect((await whoami(rotated.key)).status).toBe(200);
  });

  it("refuses an expired key", async () => {
    const k = await h.admin.createKey({
      organizationId: agency.organizationId,
      livemode: false,
      expiresAt: new Date(Date.now() + 1500),
    });
    shownKeys.push(k.key);
    expect((await whoami(k.key)).status).toBe(200);
    await new Promise((r) => setTimeout(r, 1600));
    expect(envelope(await whoami(k.key)).code).toBe("key_expired");
  });

  it("lets a managing organization create a live key only while its plan or a client's is an active Pro or Scale plan", async () => {
    const mgr = await h.admin.createOrganization("Small agency", "trial", "trialing");
    const client = await h.admin.createOrganization("Client on starter", "starter", "active");
    // Not managing anyone: not restricted here.
    const free = await h.admin.createKey({ organizationId: mgr.id, livemode: true });
    shownKeys.push(free.key);
    await h.admin.linkClient(mgr.id, client.id);
    const refused = await h.admin
      .createKey({ organizationId: mgr.id, livemode: true })
      .catch((e: unknown) => e);
    expect(refused).toMatchObject({ code: "plan_required" });
    // A failed payment does not count either.
    await h.admin.setPlan(client.id, "pro", "past_due");
    expect(
      await h.admin.createKey({ organizationId: mgr.id, livemode: true }).catch((e: unknown) => e),
    ).toMatchObject({
      code: "plan_required",
    });
    await h.admin.setPlan(client.id, "pro", "active");
    const ok = await h.admin.createKey({ organizationId: mgr.id, livemode: true });
    shownKeys.push(ok.key);
    expect(ok.record.livemode).toBe(true);
    // Test keys are never restricted.
    await h.admin.setPlan(client.id, "trial", "trialing");
    const test = await h.admin.createKey({ organizationId: mgr.id, livemode: false });
    shownKeys.push(test.key);
  });
});

describe("grants", () => {
  let reader: { key: string; record: { id: string } };
  let filer: { key: string; record: { id: string } };

  beforeAll(async () => {
    await h.admin.linkClient(agency.organizationId, brand.organizationId);
    reader = await h.admin.createKey({
      organizationId: agency.organizationId,
      livemode: false,
      scopes: ["passports:write", "events:read"],
    });
    filer = await h.admin.createKey({
      organizationId: agency.organizationId,
      livemode: false,
      scopes: ["filings:write", "passports:read"],
    });
    shownKeys.push(reader.key, filer.key);
  });

  it("grants within the key's own scopes and lists the client in GET /organizations", async () => {
    const res = await h.request(grants(brand.organizationId), {
      key: agency.testKey,
      body: { key_id: reader.record.id, scopes: ["passports:read", "events:read"] },
    });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      object: "grant",
      organization_id: brand.organizationId,
      key_id: reader.record.id,
      scopes: ["passports:read", "events:read"],
    });
    // Same scopes again: harmless; other scopes: grant_conflict.
    expect(
      (
        await h.request(grants(brand.organizationId), {
          key: agency.testKey,
          body: { key_id: reader.record.id, scopes: ["events:read", "passports:read"] },
        })
      ).status,
    ).toBe(201);
    const conflict = await h.request(grants(brand.organizationId), {
      key: agency.testKey,
      body: { key_id: reader.record.id, scopes: ["passports:write"] },
    });
    expect(conflict.status).toBe(409);
    expect(envelope(conflict)).toMatchObject({
      code: "grant_conflict",
      details: { existing_scopes: ["passports:read", "events:read"] },
    });

    const orgs = await h.request("/organizations", { key: reader.key });
    expect(orgs.body.data).toEqual([
      expect.objectContaining({ organization_id: agency.organizationId, link_status: null }),
      expect.objectContaining({
        organization_id: brand.organizationId,
        link_status: "accepted",
        scopes: ["passports:read", "events:read"],
      }),
    ]);
    expect(
      (await h.request(`/organizations/${brand.organizationId}/passports`, { key: reader.key })).status,
    ).toBe(200);
  });

  it("refuses every way the spec lists", async () => {
    const post = (key: string, body: unknown, org = brand.organizationId) =>
      h.request(grants(org), { key, body });
    const code = async (p: ReturnType<typeof post>) => {
      const r = await p;
      return `${r.status} ${envelope(r).code}`;
    };
    expect(await code(post(agency.testKey, { key_id: reader.record.id, scopes: ["keys:admin"] }))).toBe(
      "422 validation_failed",
    );
    expect(await code(post(agency.testKey, { key_id: reader.record.id }))).toBe("422 validation_failed");
    expect(
      await code(post(agency.testKey, { key_id: reader.record.id, scopes: ["passports:read"], extra: 1 })),
    ).toBe("422 validation_failed");
    expect(await code(post(agency.testKey, { key_id: reader.record.id, scopes: ["events:read"] }))).toBe(
      "409 grant_conflict",
    );
    const fresh = await h.admin.createKey({
      organizationId: agency.organizationId,
      livemode: false,
      scopes: ["passports:read"],
    });
    shownKeys.push(fresh.key);
    expect(await code(post(agency.testKey, { key_id: fresh.record.id, scopes: ["passports:write"] }))).toBe(
      "422 scope_exceeds_key",
    );
    expect(await code(post(agency.testKey, { key_id: filer.record.id, scopes: ["filings:write"] }))).toBe(
      "403 france_mandate_required",
    );
    expect(await code(post(agency.testKey, { key_id: agency.liveKeyId, scopes: ["passports:read"] }))).toBe(
      "409 key_not_grantable",
    );
    expect(await code(post(agency.testKey, { key_id: brand.testKeyId, scopes: ["passports:read"] }))).toBe(
      "409 key_not_grantable",
    );
    const revoked = await h.admin.createKey({ organizationId: agency.organizationId, livemode: false });
    await h.admin.revokeKey(revoked.record.id);
    expect(await code(post(agency.testKey, { key_id: revoked.record.id, scopes: ["passports:read"] }))).toBe(
      "409 key_not_grantable",
    );
    // The client granting on itself, and a stranger.
    expect(await code(post(brand.testKey, { key_id: brand.testKeyId, scopes: ["passports:read"] }))).toBe(
      "403 grantor_not_seated",
    );
    const stranger = await h.tenant("Stranger");
    shownKeys.push(stranger.testKey, stranger.liveKey);
    expect(
      await code(post(stranger.testKey, { key_id: stranger.testKeyId, scopes: ["passports:read"] })),
    ).toBe("404 organization_not_found_or_not_granted");
    // keys:admin is needed on the caller's own organization.
    expect(await code(post(reader.key, { key_id: reader.record.id, scopes: ["passports:read"] }))).toBe(
      "403 insufficient_scope",
    );
    // With the client's written authorisation confirmed, filings:write can be granted.
    await h.admin.linkClient(agency.organizationId, brand.organizationId, true);
    expect((await post(agency.testKey, { key_id: filer.record.id, scopes: ["filings:write"] })).status).toBe(
      201,
    );
  });

  it("lets the client remove a key's access itself, and ending the arrangement ends every grant", async () => {
    const del = await h.request(`${grants(brand.organizationId)}/${filer.record.id}`, {
      key: brand.testKey,
      method: "DELETE",
    });
    expect(del.status).toBe(200);
    expect(del.body).toEqual({
      object: "grant",
      organization_id: brand.organizationId,
      key_id: filer.record.id,
      status: "revoked",
    });
    expect((await h.request("/organizations", { key: filer.key })).body.data).toHaveLength(1);

    expect(
      (await h.request(`/organizations/${brand.organizationId}/events`, { key: reader.key })).status,
    ).toBe(200);
    await h.admin.unlinkClient(agency.organizationId, brand.organizationId);
    // The change reaches the gateway that cached the grant through its change notification, within the bound.
    const after = await untilRefused(() =>
      h.request(`/organizations/${brand.organizationId}/events`, { key: reader.key }),
    );
    expect(after.status).toBe(404);
    expect(envelope(after).code).toBe("organization_not_found_or_not_granted");
    const again = await h.request(grants(brand.organizationId), {
      key: agency.testKey,
      body: { key_id: reader.record.id, scopes: ["passports:read"] },
    });
    expect(envelope(again)).toMatchObject({
      code: "grantor_not_seated",
      details: { reason: "arrangement_ended" },
    });
  });
});

describe("two managers of one client", () => {
  it("ending one manager's arrangement ends its keys' grants only: the other manager's key keeps its access", async () => {
    const client = await h.tenant("Shared Brand", "starter");
    const first = await h.tenant("First Agency", "pro");
    const second = await h.tenant("Second Agency", "pro");
    shownKeys.push(
      client.testKey,
      client.liveKey,
      first.testKey,
      first.liveKey,
      second.testKey,
      second.liveKey,
    );
    const created = await h.request(`/organizations/${client.organizationId}/passports`, {
      key: client.testKey,
      body: { category: "textile" },
    });
    h.expectStatus(created, 201);
    const readers = [];
    for (const manager of [first, second]) {
      await h.admin.linkClient(manager.organizationId, client.organizationId);
      const reader = await h.admin.createKey({
        organizationId: manager.organizationId,
        livemode: false,
        scopes: ["passports:read"],
      });
      shownKeys.push(reader.key);
      const granted = await h.request(grants(client.organizationId), {
        key: manager.testKey,
        body: { key_id: reader.record.id, scopes: ["passports:read"] },
      });
      h.expectStatus(granted, 201);
      readers.push(reader);
    }
    const [firstReader, secondReader] = readers as [(typeof readers)[0], (typeof readers)[0]];
    const passport = (key: string) =>
      h.request(`/organizations/${client.organizationId}/passports/${created.body.id}`, { key });
    h.expectStatus(await passport(firstReader.key), 200);
    h.expectStatus(await passport(secondReader.key), 200);

    await h.admin.unlinkClient(first.organizationId, client.organizationId);
    const ended = await untilRefused(() => passport(firstReader.key));
    expect([ended.status, envelope(ended).code]).toEqual([404, "organization_not_found_or_not_granted"]);
    // The change that refused the first manager's key has reached the gateway: the second's still reads.
    const kept = await passport(secondReader.key);
    h.expectStatus(kept, 200);
    expect(kept.body).toMatchObject({ id: created.body.id, organization_id: client.organizationId });
    const orgs = await h.request("/organizations", { key: secondReader.key });
    expect(orgs.body.data.map((c: { organization_id: string }) => c.organization_id)).toEqual([
      second.organizationId,
      client.organizationId,
    ]);
  });
});

describe("grant events", () => {
  it("records grant.created and grant.revoked in the client's feed, in the granted key's mode", async () => {
    const manager = await h.tenant("Events Agency", "pro");
    const client = await h.tenant("Events Brand", "starter");
    await h.admin.linkClient(manager.organizationId, client.organizationId);
    const key = await h.admin.createKey({
      organizationId: manager.organizationId,
      livemode: false,
      scopes: ["passports:read"],
    });
    shownKeys.push(key.key, manager.testKey, manager.liveKey, client.testKey, client.liveKey);
    const created = await h.request(grants(client.organizationId), {
      key: manager.testKey,
      body: { key_id: key.record.id, scopes: ["passports:read"] },
    });
    expect(created.status).toBe(201);
    const revoked = await h.request(`${grants(client.organizationId)}/${key.record.id}`, {
      key: manager.testKey,
      method: "DELETE",
    });
    expect(revoked.status).toBe(200);

    const feed = async (k: string) =>
      (
        await h.request(
          `/organizations/${client.organizationId}/events?type=grant.created&type=grant.revoked`,
          { key: k },
        )
      ).body.data as any[];
    let events: any[] = [];
    for (const until = Date.now() + 15000; events.length < 2 && Date.now() < until;) {
      events = await feed(client.testKey);
      if (events.length < 2) await new Promise((r) => setTimeout(r, 100));
    }
    expect(events.map((e) => e.type)).toEqual(["grant.created", "grant.revoked"]);
    expect(events[0]).toMatchObject({
      organization_id: client.organizationId,
      livemode: false,
      related: {
        object: "grant",
        organization_id: client.organizationId,
        key_id: key.record.id,
        scopes: ["passports:read"],
        status: "active",
      },
    });
    expect(events[1].related).toMatchObject({ key_id: key.record.id, status: "revoked" });
    // Nothing in the live feed, nothing in the managing organization's feed.
    expect(await feed(client.liveKey)).toEqual([]);
    const managerFeed = await h.request(
      `/organizations/${manager.organizationId}/events?type=grant.created&type=grant.revoked`,
      { key: manager.testKey },
    );
    expect(managerFeed.body.data).toEqual([]);
  });
});

describe("capabilities", () => {
  it("answers the four capabilities from the plan and the passport service's counts", async () => {
    await h.request(`/organizations/${agency.organizationId}/passports`, {
      key: agency.liveKey,
      body: { category: "textile" },
    });
    const res = await h.request(`/organizations/${agency.organizationId}/capabilities`, {
      key: agency.liveKey,
    });
    expect(res.status).toBe(200);
    const byId = Object.fromEntries(res.body.data.map((c: any) => [c.id, c]));
    expect(Object.keys(byId).sort()).toEqual([
      "document_upload",
      "france_affichage_filing",
      "live_api_writes",
      "passport_publishing",
    ]);
    expect(byId.passport_publishing).toMatchObject({
      object: "capability",
      livemode: true,
      allowed: true,
      verification_status: "valid",
      detail: { plan_id: "pro", subscription_status: "active", publish_limit: 1000, published_count: 0 },
    });
    expect(byId.passport_publishing.detail.per_passport_check).toMatch(/\/validate$/);
    expect(byId.france_affichage_filing).toMatchObject({
      allowed: false,
      verification_status: "invalid",
      detail: {
        delegation_status: "none",
        entitlement: "included",
        api_filing_scope: "filings:write",
        // This stack has no portal configured, and nobody accepted the attestation: filing cannot work.
        api_filing_supported: false,
        per_passport_requirements: ["gtin_required", "attestation_required"],
      },
      problems: [
        expect.objectContaining({
          code: "delegation_required",
          type: "invalid",
          remediating_actions: [expect.objectContaining({ code: "request_delegation" })],
        }),
        expect.objectContaining({ code: "attestation_required", type: "invalid" }),
        expect.objectContaining({ code: "portal_unavailable", type: "invalid" }),
      ],
    });
    expect(byId.document_upload.detail).toEqual({ document_limit: 5000, documents_used: 0 });
    expect(byId.live_api_writes).toMatchObject({
      requested: true,
      allowed: true,
      detail: { plan_id: "pro", subscription_status: "active" },
    });

    await h.admin.setAffichageDelegation(agency.organizationId, "pending", "BR-42");
    await h.admin.setPlan(agency.organizationId, "pro", "past_due");
    // The plan's status travels with the key's identity, which a gateway caches within the documented bound.
    const later = await untilSeen(
      () => h.request(`/organizations/${agency.organizationId}/capabilities`, { key: agency.liveKey }),
      (res) =>
        res.status === 200 &&
        res.body.data.some((x: any) => x.id === "live_api_writes" && x.problems.length > 0),
    );
    const c = Object.fromEntries(later.body.data.map((x: any) => [x.id, x]));
    expect(c.live_api_writes.problems.map((p: any) => p.code)).toEqual(["payment_overdue"]);
    expect(c.france_affichage_filing.detail).toMatchObject({
      delegation_status: "pending",
      portal_brand_id: "BR-42",
      entitlement: "unavailable",
    });
    await h.admin.setPlan(agency.organizationId, "pro", "active");
  });
});

it("writes no key text into any log line or table", async () => {
  const dir = path.join(os.tmpdir(), `dpp-e2e-${h.db.name}`);
  const logs = fs.existsSync(dir)
    ? fs
        .readdirSync(dir)
        .map((f) => fs.readFileSync(path.join(dir, f), "utf8"))
        .join("\n")
    : "";
  const { rows } = await sql<{ dump: string }>`select string_agg(t::text, ' ') as dump from (
      select row_to_json(k)::text as t from gateway.api_key k
      union all select row_to_json(r)::text from passport.idempotency r) x`.execute(h.gatewayDb);
  for (const k of shownKeys) {
    expect(logs.includes(k)).toBe(false);
    expect((rows[0]?.dump ?? "").includes(k)).toBe(false);
  }
});
