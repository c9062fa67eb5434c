/**
 * Webhooks through the API: a local receiver verifies every delivery with the Standard Webhooks project's own
 * npm library (`standardwebhooks`), while passports are created, changed and published and the secret is rotated;
 * it sees every event of the feed once, in feed order, and each delivery's next_cursor reads on from the feed
 * exactly where the next delivery is. Live mode refuses loopback, private and metadata URLs.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { Webhook } from "standardwebhooks";
import { verifyWebhook } from "@dpp/client";
import { startHarness, type Harness, type Tenant } from "./support/harness";
import { publishableTextile } from "./support/fixtures";

jest.setTimeout(180_000);

let h: Harness;
let t: Tenant;

beforeAll(async () => {
  h = await startHarness("webhooks");
  t = await h.tenant("Hooks", "pro");
});
afterAll(() => h?.close());

interface Delivery {
  headers: Record<string, string>;
  body: string;
}

async function receiver() {
  const got: Delivery[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      got.push({
        headers: Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)])),
        body: Buffer.concat(chunks).toString("utf8"),
      });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/dpp`,
    got,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

const hooks = () => `/organizations/${t.organizationId}/webhooks`;
const passports = () => `/organizations/${t.organizationId}/passports`;

async function feed(cursor?: string): Promise<Array<{ id: string; type: string; related: { id: string } }>> {
  const all = [];
  let c = cursor;
  for (;;) {
    const page = await h.request(
      `/organizations/${t.organizationId}/events?limit=100${c ? `&cursor=${c}` : ""}`,
      {
        key: t.testKey,
      },
    );
    h.expectStatus(page, 200);
    all.push(...page.body.data);
    if (!page.body.has_more) return all;
    c = page.body.next_cursor;
  }
}

async function until<T>(f: () => Promise<T | undefined>, ms = 60_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error("condition not met in time");
    await new Promise((r) => setTimeout(r, 200));
  }
}

it("delivers every event once, in feed order, verified by standardwebhooks, during a secret rotation too", async () => {
  const r = await receiver();
  try {
    const created = await h.request(hooks(), { key: t.testKey, body: { url: r.url, description: "e2e" } });
    h.expectStatus(created, 201);
    const endpoint = created.body;
    const secret1 = endpoint.secret as string;
    expect(secret1).toMatch(/^whsec_/);
    // The secret is shown once.
    const got = await h.request(`${hooks()}/${endpoint.id}`, { key: t.testKey });
    h.expectStatus(got, 200);
    expect(got.text).not.toContain("whsec_");

    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const p = await h.request(passports(), {
        key: t.testKey,
        body: { category: "textile", data: publishableTextile(i === 1 ? { gtin: "4006381333931" } : {}) },
      });
      h.expectStatus(p, 201);
      ids.push(p.body.id);
    }
    const rotated = await h.request(`${hooks()}/${endpoint.id}/rotate-secret`, {
      key: t.testKey,
      body: { overlap_seconds: 600 },
    });
    h.expectStatus(rotated, 200);
    const secret2 = rotated.body.secret as string;
    expect(secret2).not.toBe(secret1);
    const patched = await h.request(`${passports()}/${ids[0]}`, {
      key: t.testKey,
      method: "PATCH",
      headers: { "if-match": "*" },
      body: { data: { product_mass: { value: 210, unit: "g" } } },
    });
    h.expectStatus(patched, 200);
    h.expectStatus(
      await h.request(`${passports()}/${ids[1]}/publish`, { key: t.testKey, method: "POST" }),
      200,
    );

    // What the feed holds from the endpoint's creation on, and what the receiver got, agree.
    const expected = await until(async () => {
      const all = await feed();
      const from = all.findIndex(
        (e) => e.type === "webhook_endpoint.created" && e.related.id === endpoint.id,
      );
      const want = all.slice(from);
      const done = want.some((e) => e.type === "passport.published") && r.got.length >= want.length;
      return from >= 0 && done ? want : undefined;
    });
    // Nothing more arrives: every event once.
    await new Promise((res) => setTimeout(res, 1000));
    const bodies = r.got.map((d) => JSON.parse(d.body));
    expect(bodies.map((b) => b.id)).toEqual(expected.map((e) => e.id));
    expect(new Set(bodies.map((b) => b.id)).size).toBe(bodies.length);

    const rotationAt = bodies.findIndex((b) => b.type === "webhook_endpoint.updated");
    expect(rotationAt).toBeGreaterThan(0);
    r.got.forEach((d, i) => {
      // The Standard Webhooks library verifies it (throws otherwise); the webhook-id is the event's id.
      const verified = new Webhook(secret1).verify(d.body, d.headers) as { id: string };
      expect(verified.id).toBe(bodies[i].id);
      expect(d.headers["webhook-id"]).toBe(bodies[i].id);
      // The deliveries after the rotation (signed when sent) carry both signatures: the new secret verifies them too.
      if (i >= rotationAt) {
        expect(d.headers["webhook-signature"]!.split(" ")).toHaveLength(2);
        new Webhook(secret2).verify(d.body, d.headers);
      }
    });
    // The SDK's verifyWebhook answers the typed event and the cursor after it.
    const last = r.got.at(-1)!;
    const v = await verifyWebhook(last.body, last.headers, secret2);
    expect(v.event.id).toBe(expected.at(-1)!.id);
    await expect(
      verifyWebhook(last.body, last.headers, "whsec_" + Buffer.from("x".repeat(32)).toString("base64")),
    ).rejects.toThrow();

    // Each delivery's next_cursor reads on from the feed exactly where the next delivery is.
    for (let i = 0; i < bodies.length; i++) {
      const rest = await feed(bodies[i].next_cursor);
      expect(rest.map((e) => e.id)).toEqual(expected.slice(i + 1).map((e) => e.id));
    }

    const attempts = await h.request(`${hooks()}/${endpoint.id}/attempts?limit=100`, { key: t.testKey });
    h.expectStatus(attempts, 200);
    expect(attempts.body.data).toHaveLength(bodies.length);
    expect(attempts.body.data.every((a: { status: string }) => a.status === "succeeded")).toBe(true);

    const test = await h.request(`${hooks()}/${endpoint.id}/test`, { key: t.testKey, method: "POST" });
    h.expectStatus(test, 200);
    expect(test.body).toMatchObject({ kind: "test", status: "succeeded", response_status: 204 });
    const again = await h.request(
      `${hooks()}/${endpoint.id}/attempts/${attempts.body.data[0].id}/redeliver`,
      {
        key: t.testKey,
        method: "POST",
      },
    );
    h.expectStatus(again, 200);
    expect(again.body).toMatchObject({ kind: "redelivery", webhook_id: bodies.at(-1).id });
    expect(r.got.at(-1)!.headers["webhook-id"]).toBe(bodies.at(-1).id);

    const off = await h.request(`${hooks()}/${endpoint.id}`, {
      key: t.testKey,
      method: "PATCH",
      body: { enabled: false, types: ["passport.published"] },
    });
    h.expectStatus(off, 200);
    expect(off.body).toMatchObject({ enabled: false, types: ["passport.published"], disabled_reason: null });
    const del = await h.request(`${hooks()}/${endpoint.id}`, { key: t.testKey, method: "DELETE" });
    h.expectStatus(del, 200);
    expect(del.body).toMatchObject({ id: endpoint.id, deleted: true });
    h.expectStatus(await h.request(`${hooks()}/${endpoint.id}`, { key: t.testKey }), 404);
  } finally {
    await r.close();
  }
});

it("refuses loopback, private and metadata URLs in live mode, and http; test mode takes loopback http", async () => {
  for (const url of [
    "https://127.0.0.1/hook",
    "https://localhost/hook",
    "https://10.1.2.3/hook",
    "https://192.168.0.10/hook",
    "https://169.254.169.254/latest/meta-data/",
    "https://[::1]/hook",
  ]) {
    const res = await h.request(hooks(), { key: t.liveKey, body: { url } });
    h.expectStatus(res, 422);
    expect(res.body.error.code).toBe("validation_failed");
    expect(res.body.error.details.issues).toEqual([
      expect.objectContaining({ source: { pointer: "/url" }, rule: "address_not_allowed" }),
    ]);
  }
  const http = await h.request(hooks(), { key: t.liveKey, body: { url: "http://example.com/hook" } });
  h.expectStatus(http, 422);
  expect(http.body.error.details.issues).toEqual([expect.objectContaining({ rule: "https_required" })]);
  const metadata = await h.request(hooks(), { key: t.testKey, body: { url: "http://169.254.169.254/" } });
  h.expectStatus(metadata, 422);
  const types = await h.request(hooks(), {
    key: t.testKey,
    body: { url: "http://127.0.0.1:9/", types: ["x.y"] },
  });
  h.expectStatus(types, 422);
  expect(types.body.error.details.issues).toEqual([
    expect.objectContaining({ source: { pointer: "/types/0" }, rule: "unknown_event_type" }),
  ]);
});
