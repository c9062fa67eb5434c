/** The Authenticator against the real gateway store: keys, modes, organizations, grants and scopes. */
import { sql } from "kysely";
import { Authenticator } from "../../src/modules/identity/authenticator";
import { generateKeyText } from "../../src/modules/identity/keys";
import { refusal, startStore, type Store } from "../harness";

let s: Store;
let auth: Authenticator;

beforeAll(async () => {
  s = await startStore("gw_auth");
  auth = new Authenticator(s.identity);
});
afterAll(() => s?.close());

const bearer = (key: string) => `Bearer ${key}`;
const at = (d: Date) => new Authenticator(s.identity, () => d);

async function org(name = "Org", plan = "pro", status = "active") {
  return s.admin.createOrganization(name, plan, status);
}

describe("authenticate", () => {
  it("accepts a valid key and returns its record", async () => {
    const o = await org();
    const { key, record } = await s.admin.createKey({
      organizationId: o.id,
      livemode: false,
      scopes: ["passports:read"],
    });
    const k = await auth.authenticate(bearer(key));
    expect(k).toMatchObject({
      id: record.id,
      organization_id: o.id,
      livemode: false,
      kind: "secret",
      scopes: ["passports:read"],
      last4: key.slice(-4),
    });
    // The stored digest is not the key text.
    expect(k.secret_digest).not.toContain(key.slice(12));
    // The scheme is case-insensitive; surrounding spaces do not matter.
    await expect(auth.authenticate(`bearer  ${key} `)).resolves.toMatchObject({ id: record.id });
    const live = await s.admin.createKey({ organizationId: o.id, livemode: true });
    await expect(auth.authenticate(bearer(live.key))).resolves.toMatchObject({
      id: live.record.id,
      livemode: true,
    });
  });

  it("refuses a missing header", async () => {
    for (const header of [undefined, "", "   "]) {
      const err = await refusal(auth.authenticate(header));
      expect(err.code).toBe("invalid_key");
      expect(err.status).toBe(401);
      expect(err.details).toEqual({ reason: "missing" });
    }
  });

  it("refuses any scheme but Bearer", async () => {
    const key = generateKeyText(false);
    for (const header of [
      key,
      `Basic ${Buffer.from(`${key}:`).toString("base64")}`,
      `Token ${key}`,
      "Bearer",
      `Bearer ${key} extra`,
    ]) {
      const err = await refusal(auth.authenticate(header));
      expect([err.code, err.details.reason]).toEqual(["invalid_key", "scheme"]);
    }
  });

  it("refuses a key with a bad checksum or format without a lookup", async () => {
    const o = await org();
    const { key } = await s.admin.createKey({ organizationId: o.id, livemode: false });
    const last = key[key.length - 1]!;
    const badChecksum = key.slice(0, -1) + (last === "a" ? "b" : "a");
    for (const text of [
      badChecksum,
      key.slice(0, -1),
      `${key}x`,
      key.replace("dpp_sk_test_", "dpp_sk_prod_"),
      "sk_test_123",
    ]) {
      const err = await refusal(auth.authenticate(bearer(text)));
      expect([err.code, err.details.reason]).toEqual(["invalid_key", "format"]);
    }
  });

  it("refuses a well-formed key nobody issued", async () => {
    const err = await refusal(auth.authenticate(bearer(generateKeyText(true))));
    expect(err.code).toBe("invalid_key");
    expect(err.details).toEqual({ reason: "unknown" });
  });

  it("refuses a revoked key, and revocation wins over every other state", async () => {
    const o = await org();
    const { key, record } = await s.admin.createKey({
      organizationId: o.id,
      livemode: false,
      expiresAt: new Date(Date.now() + 3_600_000),
    });
    await s.admin.rotateKey(record.id, 3600);
    await expect(auth.authenticate(bearer(key))).resolves.toBeDefined();
    const revoked = await s.admin.revokeKey(record.id);
    const err = await refusal(auth.authenticate(bearer(key)));
    expect(err.code).toBe("key_revoked");
    expect(err.details).toEqual({ key_id: record.id, revoked_at: revoked.revoked_at });
    // Still revoked later, when it would also be expired and past its overlap window.
    const later = await refusal(at(new Date(Date.now() + 7_200_000)).authenticate(bearer(key)));
    expect(later.code).toBe("key_revoked");
  });

  it("refuses an expired key from the moment it expires", async () => {
    const o = await org();
    const expiresAt = new Date(Date.now() + 60_000);
    const { key, record } = await s.admin.createKey({ organizationId: o.id, livemode: false, expiresAt });
    await expect(auth.authenticate(bearer(key))).resolves.toMatchObject({ id: record.id });
    await expect(at(new Date(expiresAt.getTime() - 1)).authenticate(bearer(key))).resolves.toBeDefined();
    for (const now of [expiresAt, new Date(expiresAt.getTime() + 86_400_000)]) {
      const err = await refusal(at(now).authenticate(bearer(key)));
      expect(err.code).toBe("key_expired");
      expect(err.details).toEqual({ key_id: record.id, expired_at: expiresAt.toISOString() });
    }
  });

  it("keeps a rotated key working inside its overlap window and refuses it after", async () => {
    const o = await org();
    const old = await s.admin.createKey({ organizationId: o.id, livemode: true, scopes: ["events:read"] });
    const rotated = await s.admin.rotateKey(old.record.id, 600);
    const endsAt = new Date(rotated.rotated.rotation_overlap_ends_at!);
    expect(endsAt.getTime()).toBeGreaterThan(Date.now() + 590_000);
    expect(rotated.record.scopes).toEqual(["events:read"]);

    // Inside the window: both keys work.
    await expect(auth.authenticate(bearer(old.key))).resolves.toMatchObject({ id: old.record.id });
    await expect(at(new Date(endsAt.getTime() - 1)).authenticate(bearer(old.key))).resolves.toBeDefined();
    await expect(auth.authenticate(bearer(rotated.key))).resolves.toMatchObject({ id: rotated.record.id });

    // After it: the old key is refused naming its replacement; the new one works.
    const after = at(new Date(endsAt.getTime() + 1000));
    const err = await refusal(after.authenticate(bearer(old.key)));
    expect(err.code).toBe("key_rotated");
    expect(err.status).toBe(401);
    expect(err.details).toEqual({
      key_id: old.record.id,
      replaced_by_key_id: rotated.record.id,
      overlap_ended_at: endsAt.toISOString(),
    });
    await expect(after.authenticate(bearer(rotated.key))).resolves.toMatchObject({ id: rotated.record.id });
    // A key is rotated once.
    expect((await refusal(s.admin.rotateKey(old.record.id, 600))).code).toBe("wrong_status");
  });

  it("refuses a credential whose prefix names the other mode than its record (mode_mismatch)", async () => {
    const o = await org();
    const { key, record } = await s.admin.createKey({ organizationId: o.id, livemode: false });
    await sql`update api_key set livemode = true where id = ${record.id}`.execute(s.sql);
    const err = await refusal(auth.authenticate(bearer(key)));
    expect(err.code).toBe("mode_mismatch");
    expect(err.status).toBe(400);
    expect(err.details).toEqual({ key_prefix_mode: "test" });
  });
});

describe("resolveOrganization", () => {
  it("resolves the key's own organization with the key's scopes and the organization's plan", async () => {
    const o = await org("Own", "starter", "past_due");
    const { key } = await s.admin.createKey({
      organizationId: o.id,
      livemode: false,
      scopes: ["passports:write"],
    });
    const k = await auth.authenticate(bearer(key));
    const access = await auth.resolveOrganization(k, o.id);
    expect(access).toMatchObject({
      organization: { id: o.id, name: "Own" },
      scopes: ["passports:write"],
      viaGrant: false,
      plan: { planId: "starter", subscriptionStatus: "past_due" },
    });
  });

  it("refuses the wildcard organization", async () => {
    const o = await org();
    const k = await auth.authenticate(
      bearer((await s.admin.createKey({ organizationId: o.id, livemode: false })).key),
    );
    const err = await refusal(auth.resolveOrganization(k, "-"));
    expect(err.code).toBe("wildcard_not_supported");
    expect(err.status).toBe(400);
    expect(err.details.issues).toEqual([
      { source: { parameter: "organization" }, rule: "wildcard_not_supported" },
    ]);
  });

  it("answers a stranger, a nonexistent and a malformed organization identically", async () => {
    const mine = await org();
    const stranger = await org("Stranger");
    const k = await auth.authenticate(
      bearer((await s.admin.createKey({ organizationId: mine.id, livemode: false })).key),
    );
    const answers = [];
    for (const id of [stranger.id, "org_doesnotexist", "", "o".repeat(256)]) {
      const err = await refusal(auth.resolveOrganization(k, id));
      expect(err.details).toEqual({ organization_id: id });
      answers.push({ code: err.code, status: err.status, message: err.message, headers: err.headers });
    }
    expect(answers[0]!.code).toBe("organization_not_found_or_not_granted");
    expect(answers[0]!.status).toBe(404);
    for (const a of answers) expect(a).toEqual(answers[0]);
  });

  describe("grants", () => {
    it("reaches a client only through a grant while the managed link is accepted, with the grant's scopes", async () => {
      const manager = await org("Agency", "pro", "active");
      const client = await org("Client", "scale", "active");
      const mk = await s.admin.createKey({ organizationId: manager.id, livemode: false });
      const key = await auth.authenticate(bearer(mk.key));
      const resolve = () => auth.resolveOrganization(key, client.id);
      const notGranted = async () =>
        expect((await refusal(resolve())).code).toBe("organization_not_found_or_not_granted");

      // A grant without a link reaches nothing; a link without a grant neither.
      await s.admin.grant(mk.record.id, client.id, ["passports:read", "events:read"]);
      await notGranted();
      await sql`delete from "grant" where key_id = ${mk.record.id}`.execute(s.sql);
      await s.admin.linkClient(manager.id, client.id);
      await notGranted();

      await s.admin.grant(mk.record.id, client.id, ["passports:read", "events:read"]);
      const access = await resolve();
      expect(access).toMatchObject({
        organization: { id: client.id },
        scopes: ["passports:read", "events:read"],
        viaGrant: true,
        plan: { planId: "scale", subscriptionStatus: "active" },
      });
      // The grant's scopes, not the key's (which hold every scope).
      expect(mk.record.scopes).toContain("passports:write");
      expect((await refusal(() => auth.requireScope(access, "passports:write"))).code).toBe(
        "insufficient_scope",
      );
      expect(() => auth.requireScope(access, "events:read")).not.toThrow();

      // Another key of the same manager holds no grant.
      const other = await auth.authenticate(
        bearer((await s.admin.createKey({ organizationId: manager.id, livemode: false })).key),
      );
      expect((await refusal(auth.resolveOrganization(other, client.id))).code).toBe(
        "organization_not_found_or_not_granted",
      );

      // The link is what counts: once it is no longer accepted, the unrevoked grant reaches nothing.
      await sql`update managed_link set status = 'ended' where client_organization_id = ${client.id}`.execute(
        s.sql,
      );
      await notGranted();
      await sql`update managed_link set status = 'accepted' where client_organization_id = ${client.id}`.execute(
        s.sql,
      );
      await expect(resolve()).resolves.toMatchObject({ viaGrant: true });

      // A revoked grant reaches nothing.
      await sql`update "grant" set revoked_at = now() where key_id = ${mk.record.id}`.execute(s.sql);
      await notGranted();
      await s.admin.grant(mk.record.id, client.id, ["passports:write"]);
      await expect(resolve()).resolves.toMatchObject({ scopes: ["passports:write"] });

      // Ending the arrangement ends the grants; linking again does not revive them.
      await s.admin.unlinkClient(manager.id, client.id);
      await notGranted();
      await s.admin.linkClient(manager.id, client.id);
      await notGranted();
    });

    it("ends only the grants of the manager whose arrangement ends when two managers serve one client", async () => {
      const client = await org("Client", "scale", "active");
      const first = await org("First agency");
      const second = await org("Second agency");
      const keys = [];
      for (const manager of [first, second]) {
        await s.admin.linkClient(manager.id, client.id);
        const k = await s.admin.createKey({ organizationId: manager.id, livemode: false });
        await s.admin.grantChecked(k.record.id, client.id, ["passports:read"]);
        keys.push(await auth.authenticate(bearer(k.key)));
      }
      const [firstKey, secondKey] = keys as [(typeof keys)[0], (typeof keys)[0]];
      const resolve = (k: typeof firstKey) => auth.resolveOrganization(k, client.id);
      await expect(resolve(firstKey)).resolves.toMatchObject({ viaGrant: true });
      await expect(resolve(secondKey)).resolves.toMatchObject({ viaGrant: true });

      await s.admin.unlinkClient(first.id, client.id);
      expect((await refusal(resolve(firstKey))).code).toBe("organization_not_found_or_not_granted");
      // The other manager's arrangement and its key's grant go on.
      await expect(resolve(secondKey)).resolves.toMatchObject({
        organization: { id: client.id },
        scopes: ["passports:read"],
        viaGrant: true,
      });
      expect(await s.identity.findGrant(secondKey.id, client.id)).toMatchObject({ revoked_at: null });

      await s.admin.unlinkClient(second.id, client.id);
      expect((await refusal(resolve(secondKey))).code).toBe("organization_not_found_or_not_granted");
    });

    it("does not let a client's key reach its manager", async () => {
      const manager = await org("Agency");
      const client = await org("Client");
      await s.admin.linkClient(manager.id, client.id);
      const ck = await s.admin.createKey({ organizationId: client.id, livemode: false });
      await s.admin.grant(ck.record.id, manager.id, ["passports:read"]);
      const key = await auth.authenticate(bearer(ck.key));
      expect((await refusal(auth.resolveOrganization(key, manager.id))).code).toBe(
        "organization_not_found_or_not_granted",
      );
    });
  });
});

describe("requireScope", () => {
  async function accessWith(scopes: string[]) {
    const o = await org();
    const k = await auth.authenticate(
      bearer((await s.admin.createKey({ organizationId: o.id, livemode: false, scopes })).key),
    );
    return auth.resolveOrganization(k, o.id);
  }

  it("names the missing scope", async () => {
    const access = await accessWith(["passports:read", "events:read"]);
    const err = await refusal(() => auth.requireScope(access, "passports:write"));
    expect(err.code).toBe("insufficient_scope");
    expect(err.status).toBe(403);
    expect(err.message).toContain("passports:write");
    expect(err.details).toEqual({
      required_scope: "passports:write",
      granted_scopes: ["passports:read", "events:read"],
    });
  });

  it("lets a write scope allow the matching read, and nothing else", async () => {
    const access = await accessWith(["passports:write"]);
    expect(() => auth.requireScope(access, "passports:read")).not.toThrow();
    expect(() => auth.requireScope(access, "passports:write")).not.toThrow();
    expect((await refusal(() => auth.requireScope(access, "events:read"))).details.required_scope).toBe(
      "events:read",
    );
    expect((await refusal(() => auth.requireScope(access, "documents:read"))).code).toBe(
      "insufficient_scope",
    );
  });
});
