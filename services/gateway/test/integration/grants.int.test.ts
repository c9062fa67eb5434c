/**
 * Grants over HTTP on the gateway started as in production (its store, identity cache and change listener): the
 * scopes a key may be granted on a client (spec: Organizations and grants; docs/decisions/0002), and what ending a
 * managing arrangement ends when several organizations manage the same client. No service is called: the routes
 * used here are the gateway's own.
 */
import { httpRequest, refusal, startStore, type Store } from "../harness";

let s: Store;
let base: string;

beforeAll(async () => {
  s = await startStore("gw_grants");
  base = `http://127.0.0.1:${s.gateway.extra.port}`;
});
afterAll(() => s?.close());

/** A client and a manager of it holding a test key with every scope (its keys:admin grants). */
async function managedClient(clientName = "Brand") {
  const client = await s.admin.createOrganization(clientName, "starter", "active");
  return { client, manager: await managerOf(client.id) };
}

/** An organization managing `clientId`, with a test key holding every scope. */
async function managerOf(clientId: string, name = "Agency") {
  const org = await s.admin.createOrganization(name, "pro", "active");
  await s.admin.linkClient(org.id, clientId);
  const admin = await s.admin.createKey({ organizationId: org.id, livemode: false });
  return { org, adminKey: admin.key };
}

const grant = (callerKey: string, clientId: string, body: unknown) =>
  httpRequest(base, `/v1/organizations/${clientId}/grants`, { key: callerKey, body });

/** The organizations a key reaches, as GET /v1/organizations lists them. */
async function reached(key: string): Promise<string[]> {
  const res = await httpRequest(base, "/v1/organizations", { key });
  expect(res.status).toBe(200);
  return (res.body.data as { organization_id: string }[]).map((c) => c.organization_id);
}

describe("scopes a key may be granted", () => {
  it("refuses scopes the key does not hold on its own organization with scope_exceeds_key, and grants nothing", async () => {
    const { client, manager } = await managedClient();
    const k = await s.admin.createKey({
      organizationId: manager.org.id,
      livemode: false,
      scopes: ["passports:read", "events:read"],
    });
    const res = await grant(manager.adminKey, client.id, {
      key_id: k.record.id,
      scopes: ["passports:read", "passports:write", "events:read", "units:write"],
    });
    expect(res.status).toBe(422);
    expect(res.body.error).toMatchObject({
      code: "scope_exceeds_key",
      details: {
        key_id: k.record.id,
        exceeding_scopes: ["passports:write", "units:write"],
        key_scopes: ["passports:read", "events:read"],
        issues: [
          { source: { pointer: "/scopes/1" }, rule: "scope_exceeds_key" },
          { source: { pointer: "/scopes/3" }, rule: "scope_exceeds_key" },
        ],
      },
    });
    expect(await reached(k.key)).toEqual([manager.org.id]);
    expect(await s.identity.findGrant(k.record.id, client.id)).toBeUndefined();

    // Within the key's scopes, the same key is granted.
    const ok = await grant(manager.adminKey, client.id, {
      key_id: k.record.id,
      scopes: ["events:read"],
    });
    expect(ok.status).toBe(201);
    expect(await reached(k.key)).toEqual([manager.org.id, client.id]);
  });

  it("lets a key's write scope allow the matching read, never a read the matching write", async () => {
    const { client, manager } = await managedClient();
    const writer = await s.admin.createKey({
      organizationId: manager.org.id,
      livemode: false,
      scopes: ["passports:write"],
    });
    const reader = await s.admin.createKey({
      organizationId: manager.org.id,
      livemode: false,
      scopes: ["passports:read"],
    });
    const read = await grant(manager.adminKey, client.id, {
      key_id: writer.record.id,
      scopes: ["passports:read"],
    });
    expect(read.status).toBe(201);
    expect(read.body).toMatchObject({ key_id: writer.record.id, scopes: ["passports:read"] });

    const write = await grant(manager.adminKey, client.id, {
      key_id: reader.record.id,
      scopes: ["passports:write"],
    });
    expect([write.status, write.body.error?.code]).toEqual([422, "scope_exceeds_key"]);
    expect(write.body.error.details.exceeding_scopes).toEqual(["passports:write"]);
    expect(await reached(reader.key)).toEqual([manager.org.id]);
  });

  it("refuses the admin CLI's checked grant of scopes wider than the key's in the same way", async () => {
    const { client, manager } = await managedClient();
    const k = await s.admin.createKey({
      organizationId: manager.org.id,
      livemode: false,
      scopes: ["passports:read"],
    });
    const err = await refusal(
      s.admin.grantChecked(k.record.id, client.id, ["passports:read", "events:read"]),
    );
    expect(err.code).toBe("scope_exceeds_key");
    expect(err.status).toBe(422);
    expect(err.details.exceeding_scopes).toEqual(["events:read"]);
    expect(await s.identity.findGrant(k.record.id, client.id)).toBeUndefined();
  });
});

describe("keys a manager may grant", () => {
  it("refuses a live key to a test key's grant: key_not_grantable, other_mode", async () => {
    const { client, manager } = await managedClient();
    const live = await s.admin.createKey({ organizationId: manager.org.id, livemode: true });
    const res = await grant(manager.adminKey, client.id, {
      key_id: live.record.id,
      scopes: ["passports:read"],
    });
    expect([res.status, res.body.error?.code]).toEqual([409, "key_not_grantable"]);
    expect(res.body.error.details).toEqual({ key_id: live.record.id, reason: "other_mode" });
    expect(await reached(live.key)).toEqual([manager.org.id]);
  });

  it("refuses a test key to a live key's grant, and grants a live key of the same mode", async () => {
    const { client, manager } = await managedClient();
    const liveAdmin = await s.admin.createKey({ organizationId: manager.org.id, livemode: true });
    const test = await s.admin.createKey({ organizationId: manager.org.id, livemode: false });
    const refused = await grant(liveAdmin.key, client.id, {
      key_id: test.record.id,
      scopes: ["passports:read"],
    });
    expect(refused.body.error).toMatchObject({
      code: "key_not_grantable",
      details: { key_id: test.record.id, reason: "other_mode" },
    });
    expect(await s.identity.findGrant(test.record.id, client.id)).toBeUndefined();
    const live = await s.admin.createKey({ organizationId: manager.org.id, livemode: true });
    const ok = await grant(liveAdmin.key, client.id, { key_id: live.record.id, scopes: ["passports:read"] });
    expect(ok.status).toBe(201);
  });
});

describe("two organizations managing one client", () => {
  it("ending one arrangement ends that manager's grants only; the other manager's keys keep reaching the client", async () => {
    const { client, manager: first } = await managedClient("Shared brand");
    const second = await managerOf(client.id, "Second agency");
    const keys = [];
    for (const m of [first, second]) {
      const k = await s.admin.createKey({
        organizationId: m.org.id,
        livemode: false,
        scopes: ["passports:read"],
      });
      expect(
        (await grant(m.adminKey, client.id, { key_id: k.record.id, scopes: ["passports:read"] })).status,
      ).toBe(201);
      expect(await reached(k.key)).toEqual([m.org.id, client.id]);
      keys.push(k);
    }
    const [firstKey, secondKey] = keys as [(typeof keys)[0], (typeof keys)[0]];

    await s.admin.unlinkClient(first.org.id, client.id);
    expect(await reached(firstKey.key)).toEqual([first.org.id]);
    expect(await reached(secondKey.key)).toEqual([second.org.id, client.id]);
    // The second manager still grants on the client; the first no longer may.
    const another = await s.admin.createKey({ organizationId: second.org.id, livemode: false });
    expect(
      (await grant(second.adminKey, client.id, { key_id: another.record.id, scopes: ["events:read"] }))
        .status,
    ).toBe(201);
    const refused = await grant(first.adminKey, client.id, {
      key_id: firstKey.record.id,
      scopes: ["passports:read"],
    });
    expect(refused.body.error).toMatchObject({
      code: "grantor_not_seated",
      details: { reason: "arrangement_ended" },
    });
  });
});
