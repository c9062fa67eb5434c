/** Every authentication and organization refusal the spec lists, through HTTP. */
import { sql } from "kysely";
import { envelope, startHarness, untilRefused, type Harness, type Tenant } from "./support/harness";

let h: Harness;
let t: Tenant;
let client: Tenant;
let stranger: Tenant;

beforeAll(async () => {
  h = await startHarness("e2e_auth");
  t = await h.tenant("Agency");
  client = await h.tenant("Client Brand");
  stranger = await h.tenant("Stranger");
});
afterAll(() => h?.close());

const whoami = (key: string | null, headers: Record<string, string> = {}) =>
  h.request("/whoami", { key, headers });

describe("keys", () => {
  it("answers whoami with the key id for a valid key", async () => {
    const res = await whoami(t.testKey);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      object: "whoami",
      key_id: t.testKeyId,
      organization_id: t.organizationId,
      livemode: false,
      kind: "secret",
    });
    expect(res.text).not.toContain(t.testKey);
  });

  it("refuses a request without a key, with another scheme, or with a malformed key", async () => {
    for (const res of [
      await whoami(null),
      await whoami(null, { authorization: `Basic ${Buffer.from("a:b").toString("base64")}` }),
      await whoami(null, { authorization: "Bearer" }),
      await whoami(t.testKey.slice(0, -1) + (t.testKey.endsWith("a") ? "b" : "a")),
      await whoami("dpp_sk_test_short"),
    ]) {
      expect(res.status).toBe(401);
      expect(envelope(res).code).toBe("invalid_key");
    }
  });

  it("refuses a well-formed key nobody issued", async () => {
    const { generateKeyText } = await import("@dpp/gateway");
    const res = await whoami(generateKeyText(false));
    expect(res.status).toBe(401);
    expect(envelope(res).code).toBe("invalid_key");
  });

  it("refuses a revoked key", async () => {
    // Revoked before its first use, so no gateway holds it in its key cache; a cached key's revocation shows
    // within the cache's bound (untilRefused, keys-grants.e2e.test.ts).
    const k = await h.admin.createKey({ organizationId: t.organizationId, livemode: false });
    await h.admin.revokeKey(k.record.id);
    const res = await whoami(k.key);
    expect(res.status).toBe(401);
    expect(envelope(res).code).toBe("key_revoked");
  });

  it("refuses an expired key", async () => {
    const k = await h.admin.createKey({
      organizationId: t.organizationId,
      livemode: false,
      expiresAt: new Date(Date.now() - 1000),
    });
    const res = await whoami(k.key);
    expect(res.status).toBe(401);
    expect(envelope(res).code).toBe("key_expired");
  });

  it("keeps a rotated key working through its overlap window, then refuses it", async () => {
    const k = await h.admin.createKey({ organizationId: t.organizationId, livemode: false });
    const within = await h.admin.rotateKey(k.record.id, 3600);
    expect((await whoami(k.key)).status).toBe(200);
    expect((await whoami(within.key)).status).toBe(200);
    const closed = await h.admin.rotateKey(within.record.id, 0);
    // `within` was used above: its rotation shows once the gateway's change notification arrives.
    const res = await untilRefused(() => whoami(within.key));
    expect(res.status).toBe(401);
    expect(envelope(res)).toMatchObject({
      code: "key_rotated",
      details: { replaced_by_key_id: closed.record.id },
    });
    expect((await whoami(closed.key)).status).toBe(200);
  });

  it("refuses a credential whose prefix names the other mode than its record (mode_mismatch)", async () => {
    const k = await h.admin.createKey({ organizationId: t.organizationId, livemode: false });
    await sql`update gateway.api_key set livemode = true where id = ${k.record.id}`.execute(h.gatewayDb);
    const res = await whoami(k.key);
    expect(res.status).toBe(400);
    expect(envelope(res).code).toBe("mode_mismatch");
  });
});

describe("organizations, grants and scopes", () => {
  const passports = (org: string) => `/organizations/${org}/passports`;

  it("answers 404 organization_not_found_or_not_granted alike for a stranger and a nonexistent organization", async () => {
    const a = await h.request(passports(stranger.organizationId), { key: t.testKey });
    const b = await h.request(passports("org_does_not_exist"), { key: t.testKey });
    expect(a.status).toBe(404);
    expect(b.status).toBe(404);
    const ea = envelope(a);
    const eb = envelope(b);
    expect(ea.code).toBe("organization_not_found_or_not_granted");
    expect({ ...ea, request_id: "", details: {} }).toEqual({ ...eb, request_id: "", details: {} });
  });

  it("refuses the wildcard organization", async () => {
    const res = await h.request(passports("-"), { key: t.testKey });
    expect(res.status).toBe(400);
    expect(envelope(res).code).toBe("wildcard_not_supported");
  });

  it("names the missing scope", async () => {
    const k = await h.admin.createKey({
      organizationId: t.organizationId,
      livemode: false,
      scopes: ["events:read"],
    });
    const res = await h.request(passports(t.organizationId), { key: k.key });
    expect(res.status).toBe(403);
    const e = envelope(res);
    expect(e.code).toBe("insufficient_scope");
    expect(e.details.required_scope).toBe("passports:read");
    expect(e.message).toContain("passports:read");
    const write = await h.request(passports(t.organizationId), { key: k.key, body: { category: "general" } });
    expect(envelope(write).details.required_scope).toBe("passports:write");
    expect((await h.request(`/organizations/${t.organizationId}/events`, { key: k.key })).status).toBe(200);
  });

  it("lets a write scope read", async () => {
    const k = await h.admin.createKey({
      organizationId: t.organizationId,
      livemode: false,
      scopes: ["passports:write"],
    });
    expect((await h.request(passports(t.organizationId), { key: k.key })).status).toBe(200);
  });

  it("reaches a managed client through a grant, within its scopes, until the arrangement ends", async () => {
    await h.admin.linkClient(t.organizationId, client.organizationId);
    expect((await h.request(passports(client.organizationId), { key: t.testKey })).status).toBe(404);
    await h.admin.grant(t.testKeyId, client.organizationId, ["passports:read"]);

    const orgs = await h.request("/organizations", { key: t.testKey });
    expect(orgs.status).toBe(200);
    expect(orgs.body.data).toEqual([
      expect.objectContaining({
        object: "connection",
        organization_id: t.organizationId,
        name: `organizations/${t.organizationId}`,
        display_name: "Agency",
        link_status: null,
      }),
      expect.objectContaining({
        object: "connection",
        organization_id: client.organizationId,
        display_name: "Client Brand",
        link_status: "accepted",
        scopes: ["passports:read"],
      }),
    ]);

    const read = await h.request(passports(client.organizationId), { key: t.testKey });
    expect(read.status).toBe(200);
    const write = await h.request(passports(client.organizationId), {
      key: t.testKey,
      body: { category: "general" },
    });
    expect(write.status).toBe(403);
    expect(envelope(write).code).toBe("insufficient_scope");
    // The grant belongs to the test key only.
    expect((await h.request(passports(client.organizationId), { key: t.liveKey })).status).toBe(404);

    await h.admin.unlinkClient(t.organizationId, client.organizationId);
    // Like a key's change, the end of a grant reaches the gateway with its change notification, within the cache bound.
    const after = await untilRefused(() => h.request(passports(client.organizationId), { key: t.testKey }));
    expect(after.status).toBe(404);
    expect(envelope(after).code).toBe("organization_not_found_or_not_granted");
    const orgsAfter = await h.request("/organizations", { key: t.testKey });
    expect(orgsAfter.body.data.map((c: any) => c.organization_id)).toEqual([t.organizationId]);
  });
});

describe("category endpoints", () => {
  it("answer without a credential but still check a key that is sent", async () => {
    expect((await h.request("/categories")).status).toBe(200);
    expect((await h.request("/categories", { key: t.testKey })).status).toBe(200);
    const k = await h.admin.createKey({ organizationId: t.organizationId, livemode: false });
    await h.admin.revokeKey(k.record.id);
    const revoked = await h.request("/categories/textile/schema", { key: k.key });
    expect(revoked.status).toBe(401);
    expect(envelope(revoked).code).toBe("key_revoked");
    const junk = await h.request("/categories", { headers: { authorization: "Bearer nope" } });
    expect(junk.status).toBe(401);
  });
});
