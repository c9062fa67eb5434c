/**
 * The gateway's metrics as Prometheus reads them (docs/metrics.md): requests answered, scraped over HTTP from its
 * metrics port, counted under their route's pattern (never the raw path), timed, and its 429s counted by limit.
 */
import { randomBytes } from "node:crypto";
import { startServiceUnderTest, type UnderTest } from "@dpp/kit/testing";
import { Admin } from "../../src/modules/identity/admin";
import { IdentityRepository } from "../../src/modules/identity/identity.repository";
import { gatewayService } from "../../src/gateway";

const PER_KEY = 6;
let gateway: UnderTest<typeof gatewayService>;
let admin: Admin;
let base: string;

beforeAll(async () => {
  gateway = await startServiceUnderTest(
    gatewayService,
    {
      HTTP_HOST: "127.0.0.1",
      HTTP_PORT: "0",
      RATE_LIMIT_PER_KEY_PER_MINUTE: String(PER_KEY),
      RATE_LIMIT_KEY_PREFIX: `dpp:rl:metrics:${randomBytes(4).toString("hex")}`,
    },
    "gw_metrics",
  );
  admin = new Admin(new IdentityRepository(gateway.db));
  base = `http://127.0.0.1:${gateway.extra.port}`;
});
afterAll(async () => {
  await gateway?.close();
});

/** The samples of `name` in a scrape, each with its labels. */
function samples(text: string, name: string): Array<{ labels: Record<string, string>; value: number }> {
  const out: Array<{ labels: Record<string, string>; value: number }> = [];
  for (const line of text.split("\n")) {
    const m = /^([^{ ]+)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]!] = l[2]!;
    out.push({ labels, value: Number(m[3]) });
  }
  return out;
}

const valueOf = (text: string, name: string, labels: Record<string, string>) =>
  samples(text, name).find((s) => Object.entries(labels).every(([k, v]) => s.labels[k] === v))?.value;

const scrape = async () => (await fetch(`http://127.0.0.1:${gateway.metricsPort}/metrics`)).text();

const get = (path: string, key?: string, method = "GET") =>
  fetch(`${base}${path}`, { method, headers: key ? { authorization: `Bearer ${key}` } : {} });

test("counts and times every answer under its route's pattern, and counts each 429 under its limit", async () => {
  const org = await admin.createOrganization("Metrics Org", "pro", "active");
  const a = await admin.createKey({ organizationId: org.id, livemode: false });
  const b = await admin.createKey({ organizationId: org.id, livemode: false });
  const unknownKeyId = `key_${randomBytes(8).toString("hex")}`;

  expect((await get("/healthz")).status).toBe(200);
  expect((await get("/v1/whoami", a.key)).status).toBe(200);
  expect((await get("/v1/whoami", a.key)).status).toBe(200);
  const revoked = await get(`/v1/organizations/${org.id}/grants/${unknownKeyId}`, a.key, "DELETE");
  expect(revoked.status).toBe(404);
  expect((await get(`/v1/no-such-thing/${unknownKeyId}`)).status).toBe(404);
  // Key b: its budget, then one request past it.
  for (let i = 0; i < PER_KEY; i++) expect((await get("/v1/whoami", b.key)).status).toBe(200);
  const refused = await get("/v1/whoami", b.key);
  expect(refused.status).toBe(429);

  const text = await scrape();
  const gw = { service: "gateway" };
  const whoami = { ...gw, route: "/v1/whoami", method: "GET" };
  expect(valueOf(text, "dpp_http_requests_total", { ...whoami, status: "200" })).toBe(2 + PER_KEY);
  expect(valueOf(text, "dpp_http_requests_total", { ...whoami, status: "429" })).toBe(1);
  expect(valueOf(text, "dpp_http_request_duration_seconds_count", whoami)).toBe(3 + PER_KEY);
  expect(valueOf(text, "dpp_http_request_duration_seconds_bucket", { ...whoami, le: "+Inf" })).toBe(
    3 + PER_KEY,
  );
  expect(
    valueOf(text, "dpp_http_requests_total", {
      ...gw,
      route: "/v1/organizations/{organization}/grants/{keyId}",
      method: "DELETE",
      status: "404",
    }),
  ).toBe(1);
  expect(
    valueOf(text, "dpp_http_requests_total", { ...gw, route: "/healthz", method: "GET", status: "200" }),
  ).toBe(1);
  expect(
    valueOf(text, "dpp_http_requests_total", { ...gw, route: "unmatched", method: "GET", status: "404" }),
  ).toBe(1);
  expect(valueOf(text, "dpp_rate_limit_refusals_total", { ...gw, limit: "per-key" })).toBe(1);
  // No raw path in any label: neither the organization's id nor the key id sent in a path.
  expect(text).not.toContain(org.id);
  expect(text).not.toContain(unknownKeyId);
});

test("reports its pool and its outbox relay, and Node's own series", async () => {
  const text = await scrape();
  expect(valueOf(text, "dpp_pg_pool_max", { service: "gateway" })).toBe(5);
  expect(valueOf(text, "dpp_outbox_backlog", { service: "gateway" })).toBeGreaterThanOrEqual(0);
  expect(valueOf(text, "nodejs_eventloop_lag_seconds", { service: "gateway" })).toBeGreaterThanOrEqual(0);
});
