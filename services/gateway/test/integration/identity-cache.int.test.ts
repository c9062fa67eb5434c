/**
 * The identity cache (identity-cache.ts) in the HTTP app, on the real store: keys, organizations and grants
 * are read from Postgres once and then from memory; every change reaches the cache through the schema's
 * change notifications (or, for the gateway's own writes, at once in process); the TTL bounds staleness when
 * notifications are lost; the cache never widens what a key reaches.
 *
 * The app's store statements are counted (a Kysely of its own, logging every query), and the cache's clock is
 * frozen unless a test moves it, so an entry leaves the cache only by a notification or by that test's clock:
 * nothing here depends on how fast the machine is.
 */
import type { AddressInfo } from "node:net";
import type { Server } from "node:http";
import { Kysely, PostgresDialect, sql } from "kysely";
import { createLogger, type CallOptions, type RequestContext } from "@dpp/kit";
import { createPool } from "@dpp/kit/internal";
import { passportV1, timestampFromDate } from "@dpp/proto";
import { Authenticator } from "../../src/modules/identity/authenticator";
import { createApp } from "../../src/http/app";
import { fakeModuleDeps, gatewayModules, type ModuleDeps } from "../../src/modules";
import { routeTable } from "../../src/routes";
import { IdentityRepository } from "../../src/modules/identity/identity.repository";
import { IdentityCache, listenForIdentityChanges } from "../../src/modules/identity/identity-cache";
import { generateKeyText } from "../../src/modules/identity/keys";
import type { ChangeListener } from "../../src/store/change-listener";
import type { GatewayDB } from "../../src/store/schema";
import { GATEWAY_SCHEMA } from "../../src/gateway";
import { httpRequest, startStore, type Store } from "../harness";

const log = createLogger("gateway-cache-test", "silent");
const TTL = 5000;

// ---- a passport service that answers every read, and remembers the context it was called with ---------------

const contexts: RequestContext[] = [];
const at = timestampFromDate(new Date("2026-01-02T03:04:05.678Z"));
const getPassport = async (req: { id: string }, opts: CallOptions) => {
  contexts.push(opts.context);
  return {
    passport: {
      $typeName: "dpp.passport.v1.Passport",
      id: req.id,
      organizationId: opts.context.organizationId!,
      category: "textile",
      status: passportV1.PassportStatus.DRAFT,
      version: 1,
      livemode: opts.context.livemode!,
      createdAt: at,
      updatedAt: at,
      dataJson: "{}",
    },
  };
};
// Capabilities count published passports through GetUsage.
const getUsage = async () => ({ publishedCount: 0 });
const passport = { getPassport, getUsage, close: () => undefined } as unknown as ModuleDeps["passport"];
/** The documents service's count for the capabilities (an empty library). */
const documents = {
  getUsage: async () => ({ documentsUsed: 0 }),
  close: () => undefined,
} as unknown as ModuleDeps["documents"];
/** The variants-units service's count for the capabilities (no units). */
const variantsUnits = {
  getUnitUsage: async () => ({ unitCount: 0 }),
  close: () => undefined,
} as unknown as ModuleDeps["variantsUnits"];

// ---- apps on the real store ------------------------------------------------------------------------------------

let s: Store;
/** Every statement the apps' store ran, in order. */
const statements: string[] = [];
let counted: Kysely<GatewayDB>;
let clock = Date.now();
const servers: Server[] = [];
const listeners: ChangeListener[] = [];

interface App {
  base: string;
  cache: IdentityCache;
  listener?: ChangeListener;
}

/** The app as gateway.ts wires it: the cache is evicted by the app's own writes and, with `listen`, by NOTIFY. */
async function start(o: { listen: boolean; maxEntries?: number; ttlMs?: number }): Promise<App> {
  const ttl = o.ttlMs ?? TTL;
  const cache = new IdentityCache({
    keyTtlMs: ttl,
    organizationTtlMs: ttl,
    grantTtlMs: ttl,
    maxEntries: o.maxEntries,
    now: () => clock,
  });
  const identity = new IdentityRepository(counted, undefined, (change) => cache.apply(change));
  let listener: ChangeListener | undefined;
  if (o.listen) {
    listener = listenForIdentityChanges(s.db.url, GATEWAY_SCHEMA, cache, log);
    listeners.push(listener);
    await listener.caughtUp();
  }
  const app = createApp({
    authenticator: new Authenticator(identity, undefined, cache),
    routes: routeTable(gatewayModules(fakeModuleDeps({ passport, documents, variantsUnits, identity }))),
    log,
    docsBaseUrl: "https://docs.test/errors",
    trustProxy: 0,
    ready: async () => undefined,
  });
  const server = await new Promise<Server>((resolve) => {
    const x = app.listen(0, "127.0.0.1", () => resolve(x));
  });
  servers.push(server);
  return { base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, cache, listener };
}

beforeAll(async () => {
  s = await startStore("gw_cache");
  counted = new Kysely<GatewayDB>({
    dialect: new PostgresDialect({
      pool: createPool({
        url: s.db.url,
        schema: GATEWAY_SCHEMA,
        applicationName: "gateway-cache-test",
        max: 3,
      }),
    }),
    log: (event) => {
      if (event.level === "query") statements.push(event.query.sql);
    },
  });
});
afterAll(async () => {
  for (const server of servers) {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  }
  for (const l of listeners) await l.stop();
  await counted?.destroy();
  await s?.close();
});
beforeEach(() => {
  contexts.length = 0;
  clock = Date.now();
});

/** The statements `run` caused on the apps' store. */
async function statementsOf(run: () => Promise<unknown>): Promise<string[]> {
  const from = statements.length;
  await run();
  return statements.slice(from);
}
const onTable = (table: string) => (stmts: string[]) => stmts.filter((q) => q.includes(`"${table}"`));
const onOrganization = onTable("organization");

const getPassportAt = (app: App, key: string, org: string, id = "pp_1") =>
  httpRequest(app.base, `/v1/organizations/${org}/passports/${id}`, { key });
const codeOf = (res: { body: any }) => res.body?.error?.code as string | undefined;

async function organizationWithKey(plan = "pro", status = "active", livemode = false) {
  const org = await s.admin.createOrganization("Org", plan, status);
  const key = await s.admin.createKey({ organizationId: org.id, livemode });
  return { org, key: key.key, keyId: key.record.id };
}

/** A manager with a key granted passports:read on a client. */
async function managedClient() {
  const manager = await organizationWithKey();
  const client = await organizationWithKey();
  await s.admin.linkClient(manager.org.id, client.org.id);
  const granted = await s.admin.createKey({ organizationId: manager.org.id, livemode: false });
  await s.admin.grantChecked(granted.record.id, client.org.id, ["passports:read"]);
  return { manager, client, granted };
}

// ---- tests -----------------------------------------------------------------------------------------------------

describe("statements", () => {
  it("answers GET passport without a single Postgres statement once the key and organization are cached", async () => {
    const app = await start({ listen: true });
    const { org, key } = await organizationWithKey();
    // The setup's own change notifications handled first: arriving after the cold read, they would empty the
    // cache it filled.
    await app.listener!.caughtUp();
    const cold = await statementsOf(() => getPassportAt(app, key, org.id));
    // What the cache saves: the key and the organization were read from the store the first time.
    expect(onTable("api_key")(cold)).toHaveLength(1);
    expect(onOrganization(cold)).toHaveLength(1);

    const warm = await statementsOf(async () => {
      for (let i = 0; i < 25; i++)
        expect((await getPassportAt(app, key, org.id, `pp_${i}`)).status).toBe(200);
    });
    expect(warm).toEqual([]);
    expect(contexts).toHaveLength(26);
  });

  it("answers through a grant without a statement once the grant is cached", async () => {
    const app = await start({ listen: true });
    const { client, granted } = await managedClient();
    await app.listener!.caughtUp();
    const cold = await statementsOf(() => getPassportAt(app, granted.key, client.org.id));
    expect(onTable("grant")(cold)).toHaveLength(1);
    const warm = await statementsOf(async () => {
      for (let i = 0; i < 10; i++)
        expect((await getPassportAt(app, granted.key, client.org.id)).status).toBe(200);
    });
    expect(warm).toEqual([]);
  });

  it("reads the store on every request with the caches turned off (TTL 0)", async () => {
    const app = await start({ listen: false, ttlMs: 0 });
    const { org, key } = await organizationWithKey();
    const stmts = await statementsOf(async () => {
      for (let i = 0; i < 5; i++) await getPassportAt(app, key, org.id);
    });
    expect(onOrganization(stmts)).toHaveLength(5);
  });
});

describe("changes", () => {
  it("carries a plan change to the services on the next request, through the change notification", async () => {
    const app = await start({ listen: true });
    const { org, key } = await organizationWithKey("pro", "active", true);
    await getPassportAt(app, key, org.id);
    expect(contexts.at(-1)!.plan).toMatchObject({ planId: "pro", subscriptionStatus: "active" });

    // Another process (the admin CLI) changes the plan: the app learns it only from the notification.
    await s.admin.setPlan(org.id, "pro", "past_due");
    await app.listener!.caughtUp();
    await getPassportAt(app, key, org.id);
    expect(contexts.at(-1)!.plan).toMatchObject({ planId: "pro", subscriptionStatus: "past_due" });

    await s.admin.setPlan(org.id, "trial", "trialing");
    await app.listener!.caughtUp();
    await getPassportAt(app, key, org.id);
    expect(contexts.at(-1)!.plan).toMatchObject({ planId: "trial", subscriptionStatus: "trialing" });
  });

  it("shows a change of the organization's affichage delegation in capabilities at once", async () => {
    const app = await start({ listen: true });
    const { org, key } = await organizationWithKey();
    const capabilities = () => httpRequest(app.base, `/v1/organizations/${org.id}/capabilities`, { key });
    const before = await capabilities();
    expect(before.status).toBe(200);
    const delegation = (res: any) =>
      res.body.data.find((c: any) => c.id === "france_affichage_filing").detail.delegation_status;
    expect(delegation(before)).toBe("none");
    await s.admin.setAffichageDelegation(org.id, "pending", "BR-1");
    await app.listener!.caughtUp();
    expect(delegation(await capabilities())).toBe("pending");
  });

  it("takes a change into account within the TTL when notifications are lost", async () => {
    const app = await start({ listen: false });
    const { org, key } = await organizationWithKey("pro", "active", true);
    await getPassportAt(app, key, org.id);
    await s.admin.setPlan(org.id, "pro", "past_due");
    // No notification reaches this app: the cached plan may be served until the TTL has passed...
    await getPassportAt(app, key, org.id);
    expect(contexts.at(-1)!.plan).toMatchObject({ subscriptionStatus: "active" });
    clock += TTL - 1;
    await getPassportAt(app, key, org.id);
    expect(contexts.at(-1)!.plan).toMatchObject({ subscriptionStatus: "active" });
    // ...and not a moment longer.
    clock += 1;
    await getPassportAt(app, key, org.id);
    expect(contexts.at(-1)!.plan).toMatchObject({ subscriptionStatus: "past_due" });
  });

  it("clears the cache when the listener's connection is lost, reconnects, and applies changes again", async () => {
    const app = await start({ listen: true });
    const { org, key } = await organizationWithKey();
    await getPassportAt(app, key, org.id);
    expect(app.cache.organizations.size).toBeGreaterThan(0);
    const terminated = await sql<{ n: number }>`
      select count(pg_terminate_backend(pid))::int as n from pg_stat_activity
      where datname = current_database() and application_name = 'gateway-identity-listener'`.execute(s.sql);
    expect(terminated.rows[0]!.n).toBeGreaterThan(0);
    await app.listener!.caughtUp(); // resolves after the reconnection
    expect(app.cache.organizations.size).toBe(0);

    await getPassportAt(app, key, org.id);
    await s.admin.setPlan(org.id, "scale", "active");
    await app.listener!.caughtUp();
    await getPassportAt(app, key, org.id);
    expect(contexts.at(-1)!.plan).toMatchObject({ planId: "scale" });
  });
});

describe("revocation", () => {
  it("stops a grant at once when the client ends it through the API, without any notification", async () => {
    const app = await start({ listen: false });
    const { client, granted } = await managedClient();
    expect((await getPassportAt(app, granted.key, client.org.id)).status).toBe(200);
    const ended = await httpRequest(
      app.base,
      `/v1/organizations/${client.org.id}/grants/${granted.record.id}`,
      {
        method: "DELETE",
        key: client.key,
      },
    );
    expect(ended.status).toBe(200);
    const after = await getPassportAt(app, granted.key, client.org.id);
    expect([after.status, codeOf(after)]).toEqual([404, "organization_not_found_or_not_granted"]);
  });

  it("stops a grant, a link and a key at once when another process ends them", async () => {
    const app = await start({ listen: true });
    const { manager, client, granted } = await managedClient();
    const other = await s.admin.createKey({ organizationId: manager.org.id, livemode: false });
    await s.admin.grantChecked(other.record.id, client.org.id, ["passports:read"]);
    for (const k of [granted.key, other.key, manager.key])
      expect((await getPassportAt(app, k, k === manager.key ? manager.org.id : client.org.id)).status).toBe(
        200,
      );

    await s.admin.revokeGrant(granted.record.id, client.org.id);
    await app.listener!.caughtUp();
    expect(codeOf(await getPassportAt(app, granted.key, client.org.id))).toBe(
      "organization_not_found_or_not_granted",
    );
    expect((await getPassportAt(app, other.key, client.org.id)).status).toBe(200);

    await s.admin.unlinkClient(manager.org.id, client.org.id);
    await app.listener!.caughtUp();
    expect(codeOf(await getPassportAt(app, other.key, client.org.id))).toBe(
      "organization_not_found_or_not_granted",
    );

    await s.admin.revokeKey(manager.keyId);
    await app.listener!.caughtUp();
    expect(codeOf(await getPassportAt(app, manager.key, manager.org.id))).toBe("key_revoked");
  });

  it("lets a grant created after a refusal work at once (refusals are not cached)", async () => {
    const app = await start({ listen: false });
    const manager = await organizationWithKey();
    const client = await organizationWithKey();
    await s.admin.linkClient(manager.org.id, client.org.id);
    expect(codeOf(await getPassportAt(app, manager.key, client.org.id))).toBe(
      "organization_not_found_or_not_granted",
    );
    await s.admin.grantChecked(manager.keyId, client.org.id, ["passports:read"]);
    expect((await getPassportAt(app, manager.key, client.org.id)).status).toBe(200);
    expect(codeOf(await getPassportAt(app, manager.key, "org_created_later"))).toBe(
      "organization_not_found_or_not_granted",
    );
    const later = await s.admin.createOrganization("Later", "pro", "active", "org_created_later");
    const laterKey = await s.admin.createKey({ organizationId: later.id, livemode: false });
    expect((await getPassportAt(app, laterKey.key, later.id)).status).toBe(200);
  });
});

describe("tenancy", () => {
  it("never serves an organization cached for one key to a key without access to it", async () => {
    const app = await start({ listen: true });
    const { manager, client, granted } = await managedClient();
    const stranger = await organizationWithKey();
    const ungranted = await s.admin.createKey({ organizationId: manager.org.id, livemode: false });
    // The client's organization and the grant are cached by the keys that reach it...
    expect((await getPassportAt(app, client.key, client.org.id)).status).toBe(200);
    expect((await getPassportAt(app, granted.key, client.org.id)).status).toBe(200);
    // ...and keys without a grant on it still get the same 404, however often they ask.
    for (let i = 0; i < 3; i++)
      for (const k of [stranger.key, manager.key, ungranted.key]) {
        const res = await getPassportAt(app, k, client.org.id);
        expect([res.status, codeOf(res)]).toEqual([404, "organization_not_found_or_not_granted"]);
      }
    // The granted key acts with the grant's scopes, not its own.
    const write = await httpRequest(app.base, `/v1/organizations/${client.org.id}/passports`, {
      key: granted.key,
      body: { category: "general" },
      headers: { "idempotency-key": "k1" },
    });
    expect(codeOf(write)).toBe("insufficient_scope");
  });
});

describe("scopes", () => {
  it("checks the route's scope on a key and organization served from the cache: a read-only key never writes", async () => {
    const app = await start({ listen: true });
    const org = await s.admin.createOrganization("Org", "pro", "active");
    const reader = await s.admin.createKey({
      organizationId: org.id,
      livemode: false,
      scopes: ["passports:read"],
    });
    for (let i = 0; i < 3; i++) expect((await getPassportAt(app, reader.key, org.id)).status).toBe(200);
    const writes = await statementsOf(async () => {
      for (let i = 0; i < 3; i++) {
        const res = await httpRequest(app.base, `/v1/organizations/${org.id}/passports/pp_1`, {
          method: "PATCH",
          key: reader.key,
          body: { data: { product_name: "changed" } },
        });
        expect([res.status, codeOf(res), res.body.error.details.required_scope]).toEqual([
          403,
          "insufficient_scope",
          "passports:write",
        ]);
      }
    });
    // Refused from the cache: no statement, and the passport service was asked nothing but the reads.
    expect(writes).toEqual([]);
    expect(contexts).toHaveLength(3);
  });
});

describe("keys", () => {
  it("still refuses a mistyped copy of a cached key as malformed", async () => {
    const app = await start({ listen: true });
    const { org, key } = await organizationWithKey();
    expect((await getPassportAt(app, key, org.id)).status).toBe(200);
    const mistyped = key.slice(0, -1) + (key.endsWith("a") ? "b" : "a");
    const res = await getPassportAt(app, mistyped, org.id);
    expect([res.status, codeOf(res), res.body.error.details]).toEqual([
      401,
      "invalid_key",
      { reason: "format" },
    ]);
  });
  it("looks a well-formed unknown key up once per TTL, and forgets it when a key changes", async () => {
    const app = await start({ listen: true });
    const { org } = await organizationWithKey();
    // The creation of that key is announced too: it must have arrived before anything is remembered.
    await app.listener!.caughtUp();
    const unknown = generateKeyText(false);
    const onKeys = onTable("api_key");
    const first = await statementsOf(() => getPassportAt(app, unknown, org.id));
    expect(onKeys(first)).toHaveLength(1);
    const again = await statementsOf(async () => {
      for (let i = 0; i < 10; i++) {
        const res = await getPassportAt(app, unknown, org.id);
        expect([res.status, codeOf(res), res.body.error.details]).toEqual([
          401,
          "invalid_key",
          { reason: "unknown" },
        ]);
      }
    });
    expect(onKeys(again)).toEqual([]);
    // After the TTL the store is asked again.
    clock += TTL;
    expect(onKeys(await statementsOf(() => getPassportAt(app, unknown, org.id)))).toHaveLength(1);
    // Any change of a key (here one created) empties what was remembered as unknown.
    await organizationWithKey();
    await app.listener!.caughtUp();
    expect(onKeys(await statementsOf(() => getPassportAt(app, unknown, org.id)))).toHaveLength(1);
  });
});

describe("bounds", () => {
  it("keeps at most maxEntries keys, organizations and grants, reading evicted ones again", async () => {
    const app = await start({ listen: true, maxEntries: 3 });
    const orgs: Awaited<ReturnType<typeof organizationWithKey>>[] = [];
    for (let i = 0; i < 5; i++) orgs.push(await organizationWithKey());
    for (const { org, key } of orgs) expect((await getPassportAt(app, key, org.id)).status).toBe(200);
    expect(app.cache.keys.size).toBe(3);
    expect(app.cache.organizations.size).toBe(3);
    // The first organizations were dropped: asking for them reads the store again; the last are cached.
    expect(
      onOrganization(await statementsOf(() => getPassportAt(app, orgs[0]!.key, orgs[0]!.org.id))),
    ).toHaveLength(1);
    expect(
      onOrganization(await statementsOf(() => getPassportAt(app, orgs[4]!.key, orgs[4]!.org.id))),
    ).toHaveLength(0);
    expect(app.cache.organizations.size).toBe(3);
  });
});
