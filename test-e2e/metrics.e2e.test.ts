/**
 * Metrics of the whole stack as Prometheus would scrape them (docs/metrics.md): every process on a metrics port
 * of its own, each series labelled with its service; a keyed create and its replay seen by the gateway (HTTP, the
 * gRPC call to passport) and by passport (the keyed call's outcomes); the event's trip through the outbox and the
 * consumers.
 */
import { randomBytes } from "node:crypto";
import type { ServiceName } from "@dpp/stack";
import { startHarness, type Harness, type Tenant } from "./support/harness";

let h: Harness;
let t: Tenant;

beforeAll(async () => {
  h = await startHarness("e2e_metrics");
  t = await h.tenant("Metrics Brand");
});
afterAll(() => h?.close());

function valueOf(text: string, name: string, labels: Record<string, string>): number | undefined {
  for (const line of text.split("\n")) {
    const m = /^([^{ ]+)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const found: Record<string, string> = {};
    for (const l of (m[2] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) found[l[1]!] = l[2]!;
    if (Object.entries(labels).every(([k, v]) => found[k] === v)) return Number(m[3]);
  }
  return undefined;
}

const scrape = async (name: ServiceName) => {
  const res = await fetch(h.stack.services[name].metricsUrl);
  expect(res.status).toBe(200);
  return res.text();
};

test("every service serves its own metrics on a port of its own", async () => {
  const urls = new Set<string>();
  for (const s of Object.values(h.stack.services)) {
    urls.add(s.metricsUrl);
    const text = await scrape(s.name);
    expect(valueOf(text, "process_resident_memory_bytes", { service: s.name })).toBeGreaterThan(0);
  }
  expect(urls.size).toBe(Object.keys(h.stack.services).length);
});

test("a keyed create and its replay: counted by the gateway and by passport, the event relayed and consumed", async () => {
  const idem = `metrics-${randomBytes(6).toString("hex")}`;
  const body = { category: "textile", external_id: `SKU-${idem}`, data: { product_name: "Metered shirt" } };
  const send = () =>
    h.request(`/organizations/${t.organizationId}/passports`, {
      key: t.testKey,
      body,
      headers: { "idempotency-key": idem },
    });
  const first = await send();
  h.expectStatus(first, 201);
  const again = await send();
  h.expectStatus(again, 201);
  expect(again.headers.get("idempotent-replayed")).toBe("true");

  const gateway = await scrape("gateway");
  const route = { service: "gateway", route: "/v1/organizations/{organization}/passports", method: "POST" };
  expect(valueOf(gateway, "dpp_http_requests_total", { ...route, status: "201" })).toBe(2);
  expect(valueOf(gateway, "dpp_http_request_duration_seconds_count", route)).toBe(2);
  expect(
    valueOf(gateway, "dpp_grpc_client_handled_total", {
      service: "gateway",
      target: "passport",
      method: "CreatePassport",
      code: "OK",
    }),
  ).toBe(2);

  const passport = await scrape("passport");
  const p = { service: "passport" };
  expect(valueOf(passport, "dpp_idempotency_outcomes_total", { ...p, outcome: "new" })).toBe(1);
  expect(valueOf(passport, "dpp_idempotency_outcomes_total", { ...p, outcome: "replayed" })).toBe(1);
  expect(
    valueOf(passport, "dpp_grpc_server_handled_total", { ...p, method: "CreatePassport", code: "OK" }),
  ).toBe(2);

  // The passport.created event leaves passport's outbox and reaches the feed: no backlog, no lag left.
  let outbox: number | undefined;
  let lag: number | undefined;
  for (let i = 0; i < 100; i++) {
    outbox = valueOf(await scrape("passport"), "dpp_outbox_backlog", p);
    lag = valueOf(await scrape("events"), "dpp_consumer_lag", { service: "events" });
    const feed = await h.request(`/organizations/${t.organizationId}/events`, { key: t.testKey });
    if (outbox === 0 && lag === 0 && feed.body?.data?.length > 0) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  expect(outbox).toBe(0);
  expect(lag).toBe(0);
});
