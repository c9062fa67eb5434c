/**
 * The authorization matrix (authz-matrix.json): every route of the gateway's
 * route table × every credential kind, each cell with its expected status and
 * error code. A route without a row fails this test, so a new route must say
 * who may call it. Cross-organization and cross-mode cells must never succeed.
 *
 * Credential kinds (organization T is the one in the path):
 *   none                    no Authorization header
 *   malformed               a key with a broken format
 *   unknown                 a well-formed key nobody issued
 *   revoked / expired       T keys, revoked / past expires_at
 *   rotated_after_window    a T key rotated with a closed overlap window
 *   rotated_within_window   a T key rotated, overlap window still open
 *   other_mode              T's live key (objects in the path are test-mode objects)
 *   own_with_scope          T's test key holding every scope
 *   own_without_scope       a T test key lacking the route's scope
 *   other_organization      a stranger organization's key holding every scope
 *   managing_with_grant     a key of M (manages T) with a grant on T: passports:write, events:read
 *   managing_grant_revoked  another M key whose grant on T was revoked
 *   connector               a T connector key holding every scope
 * The grant routes take the calling key's scopes on its OWN organization (spec), so for
 * them the managing organization's keys act as managers whether or not they hold a grant.
 */
import fs from "node:fs";
import path from "node:path";
import { ROUTES, generateKeyText, type RouteSpec } from "@dpp/gateway";
import { matrixRows, type Matrix } from "./support/authz-rows";
import { envelope, startHarness, type Harness, type Tenant } from "./support/harness";

const matrix = JSON.parse(fs.readFileSync(path.join(__dirname, "authz-matrix.json"), "utf8")) as Matrix;
// The file's rows, then the derived rows of the services' own modules (support/authz-rows.ts).
matrix.routes = matrixRows(matrix, ROUTES);

let h: Harness;
let t: Tenant;
const keys: Record<string, string | null> = {};
const ids: Record<string, string> = {};

async function freshPassport(key: string): Promise<string> {
  const res = await h.request(`/organizations/${t.organizationId}/passports`, {
    key,
    body: { category: "textile" },
  });
  expect(res.status).toBe(201);
  return res.body.id as string;
}

beforeAll(async () => {
  process.env.RATE_LIMIT_PER_KEY_PER_MINUTE = "100000";
  h = await startHarness("e2e_authz");
  t = await h.tenant("Target");
  const m = await h.tenant("Manager");
  const s = await h.tenant("Stranger");
  const mk = (o: Parameters<Harness["admin"]["createKey"]>[0]) => h.admin.createKey(o);
  const T = { organizationId: t.organizationId, livemode: false };

  const revoked = await mk(T);
  await h.admin.revokeKey(revoked.record.id);
  const expired = await mk({ ...T, expiresAt: new Date(Date.now() - 1000) });
  const closed = await mk(T);
  await h.admin.rotateKey(closed.record.id, 0);
  const open = await mk(T);
  await h.admin.rotateKey(open.record.id, 3600);
  const eventsOnly = await mk({ ...T, scopes: ["events:read"] });
  const passportsReadOnly = await mk({ ...T, scopes: ["passports:read"] });
  const connector = await mk({ ...T, kind: "connector" });

  await h.admin.linkClient(m.organizationId, t.organizationId);
  await h.admin.grantChecked(m.testKeyId, t.organizationId, ["passports:write", "events:read"]);
  const mRevoked = await mk({ organizationId: m.organizationId, livemode: false });
  await h.admin.grantChecked(mRevoked.record.id, t.organizationId, ["passports:read"]);
  await h.admin.revokeGrant(mRevoked.record.id, t.organizationId);
  // The key whose grant the DELETE rows end.
  const victim = await mk({ organizationId: m.organizationId, livemode: false });
  await h.admin.grantChecked(victim.record.id, t.organizationId, ["passports:read"]);

  Object.assign(keys, {
    none: null,
    malformed: "dpp_sk_test_tooshort",
    unknown: generateKeyText(false),
    revoked: revoked.key,
    expired: expired.key,
    rotated_after_window: closed.key,
    rotated_within_window: open.key,
    other_mode: t.liveKey,
    own_with_scope: t.testKey,
    own_without_scope: "(per route)",
    other_organization: s.testKey,
    managing_with_grant: m.testKey,
    managing_grant_revoked: mRevoked.key,
    connector: connector.key,
  });
  Object.assign(ids, {
    eventsOnly: eventsOnly.key,
    passportsReadOnly: passportsReadOnly.key,
    managingKeyId: m.testKeyId,
    victimKeyId: victim.record.id,
    passport: await freshPassport(t.testKey),
  });
});
afterAll(() => h?.close());

it("has a row for every route in the route table, and a cell for every credential kind", () => {
  const rowIds = matrix.routes.map((r) => `${r.method} ${r.path}`);
  const routeIds = ROUTES.map((r) => `${r.method} ${r.path}`);
  expect(routeIds.filter((id) => !rowIds.includes(id))).toEqual([]);
  expect(rowIds.filter((id) => !routeIds.includes(id))).toEqual([]);
  for (const r of matrix.routes)
    expect(Object.keys(r.expect).sort()).toEqual([...matrix.credential_kinds].sort());
});

function keyFor(kind: string, spec: RouteSpec): string | null {
  if (kind !== "own_without_scope") return keys[kind]!;
  return spec.scope === "events:read" ? ids.passportsReadOnly! : ids.eventsOnly!;
}

const subst = (v: unknown): unknown =>
  typeof v === "string" && v.startsWith("$")
    ? ids[v.slice(1)]
    : Array.isArray(v)
      ? v.map(subst)
      : v && typeof v === "object"
        ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, subst(x)]))
        : v;

it("answers every cell as the matrix says, and never lets a request cross organizations or modes", async () => {
  const mismatches: string[] = [];
  const crossSuccesses: string[] = [];
  let cells = 0;
  for (const row of matrix.routes) {
    const spec = ROUTES.find((r) => r.method === row.method && r.path === row.path);
    if (!spec) continue; // reported by the first test
    for (const kind of matrix.credential_kinds) {
      const want = row.expect[kind]!;
      const key = keyFor(kind, spec);
      // A write on a passport works on a fresh one, so no cell depends on another's effects.
      const id =
        spec.path.includes("{id}") && spec.method !== "GET" ? await freshPassport(t.testKey) : ids.passport!;
      const p = spec.path
        .replace("{organization}", t.organizationId)
        .replace("{id}", id)
        .replace("{keyId}", ids.victimKeyId!)
        .replace("{category}", "textile");
      const headers: Record<string, string> = {};
      if (kind === "none") headers.authorization = "";
      const res = await h.request(p, {
        method: spec.method,
        key: key === null ? undefined : key,
        body:
          row.body !== undefined
            ? subst(row.body)
            : spec.method === "POST" || spec.method === "PATCH"
              ? {}
              : undefined,
      });
      cells++;
      const code = res.status >= 300 ? envelope(res).code : null;
      if (res.status !== want.status || code !== want.code)
        mismatches.push(
          `${kind} ${spec.method} ${spec.path}: expected ${want.status} ${want.code}, got ${res.status} ${code} ${res.status >= 300 ? JSON.stringify(res.body.error.details) : ""}`,
        );
      const success = res.status >= 200 && res.status < 300;
      const tenantRoute = spec.path.includes("{organization}");
      const crossOrg =
        tenantRoute &&
        (kind === "other_organization" || (kind === "managing_grant_revoked" && spec.auth !== "grantor"));
      // Outside tenant paths (whoami, organizations, categories) a stranger never sees the target.
      if (!tenantRoute && kind === "other_organization") expect(res.text).not.toContain(t.organizationId);
      const crossMode = kind === "other_mode" && spec.path.includes("{id}");
      if (success && (crossOrg || crossMode)) crossSuccesses.push(`${kind} ${spec.method} ${spec.path}`);
      // A live key listing the organization's own collection sees live objects only.
      if (kind === "other_mode" && success) expect(res.text).not.toContain(ids.passport!);
    }
  }
  expect(mismatches).toEqual([]);
  expect(crossSuccesses).toEqual([]);
  console.log(
    `authorization matrix: ${matrix.routes.length} routes x ${matrix.credential_kinds.length} credential kinds = ${cells} cells, ${crossSuccesses.length} cross-organization or cross-mode successes`,
  );
}, 300_000);
