/**
 * Webhook delivery survives a receiver that is down for a while and a delivery worker SIGKILLed in the middle of a
 * batch: every event still arrives, in feed order, a repeat carries the same webhook-id, and a receiver resuming from
 * the last cursor it got reads exactly the events it is missing from the feed.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { Webhook } from "standardwebhooks";
import { startHarness, type Harness, type Tenant } from "./support/harness";
import { publishableTextile } from "./support/fixtures";

jest.setTimeout(180_000);

let h: Harness;
let t: Tenant;

beforeAll(async () => {
  h = await startHarness("webhooks_crash", {
    env: { WEBHOOKS_LEASE_MS: "2000", WEBHOOKS_RETRY_BASE_MS: "200", WEBHOOKS_RETRY_MAX_MS: "800" },
  });
  t = await h.tenant("Crash", "pro");
});
afterAll(() => h?.close());

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(f: () => Promise<boolean> | boolean, ms = 90_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await f())) {
    if (Date.now() > end) throw new Error("condition not met in time");
    await sleep(200);
  }
}

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

it("delivers every event in order through a receiver outage and a SIGKILLed worker, repeats keeping their webhook-id", async () => {
  let down = true;
  const accepted: Array<{ id: string; body: { id: string; next_cursor: string } }> = [];
  let refused = 0;
  let secret = "";
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      if (down) {
        refused++;
        res.writeHead(503).end();
        return;
      }
      const headers = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)]));
      new Webhook(secret).verify(body, headers);
      accepted.push({ id: headers["webhook-id"]!, body: JSON.parse(body) });
      // A slow receiver, so that the kill lands in the middle of a batch.
      setTimeout(() => res.writeHead(200).end(), 40);
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  try {
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
    const created = await h.request(`/organizations/${t.organizationId}/webhooks`, {
      key: t.testKey,
      body: { url },
    });
    h.expectStatus(created, 201);
    secret = created.body.secret;
    for (let i = 0; i < 12; i++)
      h.expectStatus(
        await h.request(`/organizations/${t.organizationId}/passports`, {
          key: t.testKey,
          body: { category: "textile", data: publishableTextile() },
        }),
        201,
      );
    // The receiver is down: attempts fail and are retried.
    await until(() => refused >= 3);
    down = false;
    await until(() => accepted.length >= 3);
    await h.stack.killService("webhooks", "SIGKILL");
    const atKill = accepted.length;
    await sleep(300);
    await h.stack.startService("webhooks");

    const all = await feed();
    const from = all.findIndex(
      (e) => e.type === "webhook_endpoint.created" && e.related.id === created.body.id,
    );
    const expected = all.slice(from).map((e) => e.id);
    expect(expected.length).toBeGreaterThanOrEqual(13);
    await until(() => new Set(accepted.map((a) => a.id)).size >= expected.length);
    expect(atKill).toBeLessThan(expected.length);

    // In feed order: each accepted delivery is the next event, except once, after the kill, when the new worker
    // goes back to the last position the killed one had recorded (at most a flush group of 50 events) and
    // delivers those events again, in order, before the rest.
    const positions = accepted.map((a) => expected.indexOf(a.body.id));
    expect(positions[0]).toBe(0);
    const rewinds: number[] = [];
    positions.slice(1).forEach((p, i) => {
      const before = positions[i]!;
      if (p !== before + 1) {
        expect(p).toBeLessThanOrEqual(before);
        rewinds.push(before - p + 1);
      }
    });
    expect(rewinds.length).toBeLessThanOrEqual(1);
    for (const r of rewinds) expect(r).toBeLessThanOrEqual(50);
    expect([...new Set(accepted.map((a) => a.body.id))]).toEqual(expected);
    for (const a of accepted) expect(a.id).toBe(a.body.id);
    const repeats = accepted.length - expected.length;
    console.log(
      `webhooks crash: ${refused} refused attempts, ${repeats} repeated deliveries after the SIGKILL`,
    );

    // A receiver that kept only what it got before the kill resumes from its last cursor: exactly the rest.
    const last = accepted[atKill - 1]!;
    const rest = await feed(last.body.next_cursor);
    expect(rest.map((e) => e.id)).toEqual(expected.slice(expected.indexOf(last.body.id) + 1));
  } finally {
    await new Promise<void>((r) => server.close(() => r()));
  }
});
