/**
 * WebhooksService over gRPC with the events service it reads: endpoints (keyed writes, the tenant's own), the
 * delivery worker's order, retries, disabling, and the address checks at creation and at delivery.
 */
import { createHmac } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { eventually, keyedContext, newTenant, tenantContext } from "@dpp/kit/testing";
import { resolverOverride } from "../../src/service";
import { startHarness, startReceiver, type Harness } from "../harness";

let h: Harness;

beforeAll(async () => {
  h = await startHarness("webhooks", { WEBHOOKS_RETRY_BASE_MS: "100", WEBHOOKS_RETRY_MAX_MS: "200" });
});
afterAll(async () => {
  resolverOverride.resolve = undefined;
  await h?.close();
});

const verify = (secret: string, headers: Record<string, unknown>, body: string) => {
  const key = Buffer.from(secret.slice("whsec_".length), "base64");
  const expected =
    "v1," +
    createHmac("sha256", key)
      .update(`${headers["webhook-id"]}.${headers["webhook-timestamp"]}.${body}`)
      .digest("base64");
  return String(headers["webhook-signature"]).split(" ").includes(expected);
};

it("creates endpoints with a secret shown once, lists, gets, updates and deletes them, the tenant's only", async () => {
  const t = newTenant();
  const a = await h.client.createEndpoint(
    { url: "http://127.0.0.1:9/a", description: " first ", types: ["passport.created", "passport.created"] },
    { context: tenantContext(t) },
  );
  expect(a.secret).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/);
  expect(a.endpoint).toMatchObject({ description: "first", types: ["passport.created"], enabled: true });
  await h.client.createEndpoint({ url: "https://example.com/b" }, { context: tenantContext(t) });
  await h.client.createEndpoint({ url: "https://example.com/c" }, { context: tenantContext() });
  const listed = await h.client.listEndpoints({ limit: 1 }, { context: tenantContext(t) });
  expect(listed.endpoints.map((e) => e.url)).toEqual(["https://example.com/b"]);
  const rest = await h.client.listEndpoints({ cursor: listed.nextCursor }, { context: tenantContext(t) });
  expect(rest.endpoints.map((e) => e.id)).toEqual([a.endpoint!.id]);
  expect(JSON.stringify(rest, (_, v: unknown) => (typeof v === "bigint" ? String(v) : v))).not.toContain(
    "whsec_",
  );

  const updated = await h.client.updateEndpoint(
    { id: a.endpoint!.id, enabled: false, setTypes: true, types: [] },
    { context: tenantContext(t) },
  );
  expect(updated.endpoint).toMatchObject({ enabled: false, types: [], description: "first" });
  await expect(
    h.client.getEndpoint({ id: a.endpoint!.id }, { context: tenantContext() }),
  ).rejects.toBeRefusedWith("resource_not_found");
  await h.client.deleteEndpoint({ id: a.endpoint!.id }, { context: tenantContext(t) });
  await expect(
    h.client.getEndpoint({ id: a.endpoint!.id }, { context: tenantContext(t) }),
  ).rejects.toBeRefusedWith("resource_not_found");
  expect((await h.rowCounts(t)).outbox).toBe(4);
});

it("answers a create again under the same Idempotency-Key, with the same secret, without writing twice", async () => {
  const t = newTenant();
  const request = { url: "https://example.com/once" };
  const ctx = () => keyedContext(t, { key: "k1", request });
  const a = await h.client.createEndpoint(request, { context: ctx() });
  const b = await h.client.createEndpoint(request, { context: ctx() });
  expect([b.endpoint!.id, b.secret]).toEqual([a.endpoint!.id, a.secret]);
  expect((await h.rowCounts(t)).endpoint).toBe(1);
});

it("refuses bad fields, live-mode http and internal addresses, and test mode's private ones", async () => {
  const live = newTenant(true);
  await expect(
    h.client.createEndpoint({ url: "ftp://x", types: ["nope.never"] }, { context: tenantContext() }),
  ).rejects.toBeRefusedWith("validation_failed", {
    issues: [
      expect.objectContaining({ source: { pointer: "/url" }, rule: "https_required" }),
      expect.objectContaining({ source: { pointer: "/types/0" }, rule: "unknown_event_type" }),
    ],
  });
  await expect(
    h.client.createEndpoint({ url: "http://example.com/" }, { context: tenantContext(live) }),
  ).rejects.toBeRefusedWith("validation_failed", {
    issues: [expect.objectContaining({ rule: "https_required" })],
  });
  for (const url of [
    "https://127.0.0.1/",
    "https://[::1]/",
    "https://10.0.0.8/",
    "https://169.254.169.254/latest/meta-data",
    "https://[::ffff:192.168.0.1]/",
  ])
    await expect(h.client.createEndpoint({ url }, { context: tenantContext(live) })).rejects.toBeRefusedWith(
      "validation_failed",
      { issues: [expect.objectContaining({ source: { pointer: "/url" }, rule: "address_not_allowed" })] },
    );
  // A name resolving to an internal address is refused too.
  resolverOverride.resolve = async () => ["192.168.1.20"];
  await expect(
    h.client.createEndpoint({ url: "https://intranet.example/" }, { context: tenantContext(live) }),
  ).rejects.toBeRefusedWith("validation_failed", {
    issues: [expect.objectContaining({ rule: "address_not_allowed" })],
  });
  resolverOverride.resolve = undefined;
  // Test mode reaches loopback, never private or metadata addresses.
  await expect(
    h.client.createEndpoint({ url: "http://169.254.169.254/" }, { context: tenantContext() }),
  ).rejects.toBeRefusedWith("validation_failed", {
    issues: [expect.objectContaining({ rule: "address_not_allowed" })],
  });
  await expect(
    h.client.rotateSecret({ id: "whep_missing", overlapSeconds: 700_000 }, { context: tenantContext() }),
  ).rejects.toBeRefusedWith("validation_failed");
});

it("delivers the feed in order, signed, with the cursor after each event, and both signatures during a rotation", async () => {
  const t = newTenant();
  const r = await startReceiver();
  try {
    const created = await h.client.createEndpoint({ url: r.url }, { context: tenantContext(t) });
    const sent = await h.publish(t, 5);
    await eventually(async () => (r.received.length >= 6 ? true : undefined));
    const bodies = r.received.map((m) => JSON.parse(m.body));
    // The endpoint's own webhook_endpoint.created event is in the feed too, wherever its relay put it.
    expect(bodies.map((b) => b.type).sort()).toEqual([
      ...sent.map(() => "passport.created"),
      "webhook_endpoint.created",
    ]);
    expect(bodies.filter((b) => b.type === "passport.created").map((b) => b.id)).toEqual(
      sent.map((e) => e.id),
    );
    for (const m of r.received) {
      expect(verify(created.secret, m.headers, m.body)).toBe(true);
      expect(m.headers["webhook-id"]).toBe(JSON.parse(m.body).id);
    }
    expect(new Set(bodies.map((b) => b.next_cursor)).size).toBe(6);

    const rotated = await h.client.rotateSecret(
      { id: created.endpoint!.id, overlapSeconds: 60 },
      { context: tenantContext(t) },
    );
    await h.publish(t, 1);
    // webhook_endpoint.updated (the rotation) and the passport event, signed by both secrets.
    await eventually(async () => (r.received.length >= 8 ? true : undefined));
    for (const m of r.received.slice(6)) {
      expect(String(m.headers["webhook-signature"]).split(" ")).toHaveLength(2);
      expect(verify(rotated.secret, m.headers, m.body)).toBe(true);
      expect(verify(created.secret, m.headers, m.body)).toBe(true);
    }
    // The position moves once per group of accepted events (at most 50 ms after the receiver's answer).
    const backlog = await eventually(async () => {
      const b = await h.client.getBacklog({ id: created.endpoint!.id }, { context: tenantContext(t) });
      return Number(b.pendingEvents) === 0 ? b : undefined;
    });
    expect(Number(backlog.pendingEvents)).toBe(0);
  } finally {
    await r.close();
  }
});

it("retries a failed event with the same webhook-id, the later ones waiting behind it; 410 disables", async () => {
  const t = newTenant();
  // created event: 500, 302, then accepted; then the passport event; then 410.
  const r = await startReceiver([500, 302]);
  try {
    const created = await h.client.createEndpoint(
      { url: r.url, types: ["passport.created"] },
      { context: tenantContext(t) },
    );
    const [first] = await h.publish(t, 1);
    await eventually(async () => (r.received.length >= 3 ? true : undefined));
    expect(r.received.map((m) => m.headers["webhook-id"])).toEqual([first!.id, first!.id, first!.id]);
    const attempts = await h.client.listAttempts(
      { endpointId: created.endpoint!.id },
      { context: tenantContext(t) },
    );
    expect(attempts.attempts.map((a) => [a.status, a.responseStatus, a.error])).toEqual([
      ["succeeded", 200, ""],
      ["failed", 302, "redirect"],
      ["failed", 500, "http_500"],
    ]);
    expect(attempts.attempts[2]!.nextRetryAt).toBeDefined();

    // Redelivery: the same event and webhook-id again, outside the order.
    const again = await h.client.redeliver(
      { endpointId: created.endpoint!.id, attemptId: attempts.attempts[0]!.id },
      { context: tenantContext(t) },
    );
    expect(again.attempt).toMatchObject({ kind: "redelivery", status: "succeeded", webhookId: first!.id });
    const test = await h.client.sendTestEvent({ id: created.endpoint!.id }, { context: tenantContext(t) });
    expect(test.attempt).toMatchObject({
      kind: "test",
      status: "succeeded",
      eventType: "webhook_endpoint.test",
    });
    expect(JSON.parse(r.received.at(-1)!.body)).toMatchObject({
      type: "webhook_endpoint.test",
      next_cursor: null,
    });

    r.received.length = 0;
    const gone = await startReceiver([410]);
    await h.client.updateEndpoint({ id: created.endpoint!.id, url: gone.url }, { context: tenantContext(t) });
    await h.publish(t, 2);
    const disabled = await eventually(async () => {
      const e = await h.client.getEndpoint({ id: created.endpoint!.id }, { context: tenantContext(t) });
      return e.endpoint!.enabled ? undefined : e.endpoint!;
    });
    expect(disabled.disabledReason).toBe("gone");
    expect(gone.received).toHaveLength(1);
    const rows = await h.sql
      .selectFrom("outbox")
      .select("type")
      .where("organization_id", "=", t.organizationId)
      .execute();
    expect(rows.map((x) => x.type)).toContain("webhook_endpoint.disabled");
    await gone.close();
  } finally {
    await r.close();
  }
});

it("checks the address again at delivery: a name that now resolves to loopback is never connected to", async () => {
  const live = newTenant(true);
  const r = await startReceiver();
  try {
    const port = new URL(r.url).port;
    resolverOverride.resolve = async () => ["93.184.215.14"];
    const created = await h.client.createEndpoint(
      { url: `https://rebind.example:${port}/hook` },
      { context: tenantContext(live) },
    );
    // DNS rebinding: the same name now answers the receiver's loopback address.
    resolverOverride.resolve = async () => ["127.0.0.1"];
    await h.publish(live, 1);
    const failed = await eventually(async () => {
      const a = await h.client.listAttempts(
        { endpointId: created.endpoint!.id },
        { context: tenantContext(live) },
      );
      return a.attempts.length > 0 ? a.attempts : undefined;
    });
    expect(failed[0]).toMatchObject({ status: "failed", error: "address_not_allowed", responseStatus: 0 });
    expect(r.received).toHaveLength(0);
  } finally {
    resolverOverride.resolve = undefined;
    await r.close();
  }
});

it("a receiver that never answers delays only its own endpoint: another organization's deliveries go on", async () => {
  const stuckTenant = newTenant();
  const fastTenant = newTenant();
  // Takes every request and never answers (until closed): each delivery to it waits out its timeout.
  const held: http.ServerResponse[] = [];
  const stuck = http.createServer((req, res) => {
    req.resume();
    held.push(res);
  });
  await new Promise<void>((r) => stuck.listen(0, "127.0.0.1", r));
  const fast = await startReceiver();
  try {
    await h.client.createEndpoint(
      { url: `http://127.0.0.1:${(stuck.address() as AddressInfo).port}/hook`, types: ["passport.created"] },
      { context: tenantContext(stuckTenant) },
    );
    await h.client.createEndpoint(
      { url: fast.url, types: ["passport.created"] },
      { context: tenantContext(fastTenant) },
    );
    await h.publish(stuckTenant, 3);
    // The stuck endpoint's first delivery is under way (and will wait out the timeout).
    await eventually(async () => (held.length >= 1 ? true : undefined));
    const started = Date.now();
    const sent = await h.publish(fastTenant, 3);
    await eventually(async () => (fast.received.length >= 3 ? true : undefined));
    expect(fast.received.map((m) => JSON.parse(m.body).id)).toEqual(sent.map((e) => e.id));
    // Well within the stuck delivery's timeout (10 s): nothing waited for it.
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(held).toHaveLength(1);
  } finally {
    for (const res of held) res.destroy();
    await new Promise<void>((r) => stuck.close(() => r()));
    await fast.close();
  }
});
