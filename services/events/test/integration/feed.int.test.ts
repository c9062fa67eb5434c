/** The consumer: bus → feed, ordering, duplicates, tenant isolation, malformed messages. */
import { type DomainEvent } from "@dpp/contract";
import { createDb } from "@dpp/kit/internal";
import { timestampDate } from "@dpp/proto";
import { EventsRepository } from "../../src/store/events.repository";
import { EVENTS_SCHEMA, type EventsDB } from "../../src/store/schema";
import { domainEvent, newOrg, startHarness, type Harness, type Tenant } from "../harness";

let h: Harness;

beforeAll(async () => {
  h = await startHarness("events_feed");
});

afterAll(async () => {
  await h?.close();
});

const test_ = (): Tenant => ({ organizationId: newOrg(), livemode: false });

describe("feed consumer", () => {
  it("serves events oldest first with sequences 1..n and every field", async () => {
    const t = test_();
    const first = domainEvent(t, "passport.created", { name: "Jacket", version: 1 });
    const rest = [
      domainEvent(t, "passport.updated", { version: 2 }),
      domainEvent(t, "passport.published", { status: "published", previous_status: "draft", version: 3 }),
      domainEvent(t, "passport.updated", { version: 4 }),
    ];
    await h.publish(first);
    await h.publish(...rest);
    const sent = [first, ...rest];
    const feed = await h.waitForFeed(t, sent.length);
    expect(feed.map((e) => e.id)).toEqual(sent.map((e) => e.id));
    expect(await h.sequences(feed)).toEqual([1, 2, 3, 4]);
    const e = feed[2]!;
    expect(e).toMatchObject({
      id: sent[2]!.id,
      organizationId: t.organizationId,
      type: "passport.published",
      livemode: false,
    });
    expect(timestampDate(e.createdAt!).toISOString()).toBe(new Date(sent[2]!.created_at).toISOString());
    expect(JSON.parse(e.relatedJson)).toEqual(sent[2]!.related);
  });

  it("drops a duplicate event id without consuming a sequence", async () => {
    const t = test_();
    const [a, b, c] = [domainEvent(t), domainEvent(t), domainEvent(t)];
    await h.publish(a!, b!);
    await h.waitForFeed(t, 2);
    // Redelivered, once verbatim and once with another body: the first one stored wins.
    await h.publish(a!, { ...a!, type: "passport.deleted", related: { changed: true } });
    await h.publish(c!);
    const feed = await h.waitForFeed(t, 3);
    expect(feed.map((e) => e.id)).toEqual([a!.id, b!.id, c!.id]);
    expect(await h.sequences(feed)).toEqual([1, 2, 3]);
    expect(feed[0]!.type).toBe("passport.created");
    const again = await h.list(t);
    expect(again.events).toHaveLength(3);
    expect(again.hasMore).toBe(false);
  });

  it("isolates organizations and modes", async () => {
    const orgA = newOrg();
    const orgB = newOrg();
    const aTest = { organizationId: orgA, livemode: false };
    const aLive = { organizationId: orgA, livemode: true };
    const bTest = { organizationId: orgB, livemode: false };
    const sent = new Map<Tenant, DomainEvent[]>([
      [aTest, [domainEvent(aTest), domainEvent(aTest), domainEvent(aTest)]],
      [aLive, [domainEvent(aLive), domainEvent(aLive)]],
      [bTest, [domainEvent(bTest)]],
    ]);
    // Interleaved on the bus.
    await h.publish(sent.get(aTest)![0]!, sent.get(aLive)![0]!, sent.get(bTest)![0]!);
    await h.publish(sent.get(aTest)![1]!, sent.get(aLive)![1]!, sent.get(aTest)![2]!);
    for (const [tenant, events] of sent) {
      const feed = await h.waitForFeed(tenant, events.length);
      expect(feed.map((e) => e.id)).toEqual(events.map((e) => e.id));
      expect(await h.sequences(feed)).toEqual(events.map((_, i) => i + 1));
      for (const e of feed) {
        expect(e.organizationId).toBe(tenant.organizationId);
        expect(e.livemode).toBe(tenant.livemode);
      }
    }
    // Nothing else shows up later either.
    const final = await h.list(aTest);
    expect(final.events).toHaveLength(3);
    expect((await h.list({ organizationId: newOrg(), livemode: false })).events).toEqual([]);
  });

  it("skips malformed messages and keeps consuming", async () => {
    const t = test_();
    const base = domainEvent(t);
    const { organization_id: _omit, ...noOrg } = domainEvent(t);
    await h.publishRaw(
      t.organizationId,
      "this is not json",
      "",
      "[]",
      "null",
      "{}",
      JSON.stringify(noOrg),
      JSON.stringify({ ...domainEvent(t), type: "PassportCreated" }),
      JSON.stringify({ ...domainEvent(t), livemode: "false" }),
      JSON.stringify({ ...domainEvent(t), created_at: "yesterday" }),
      JSON.stringify({ ...domainEvent(t), related: [1, 2] }),
      // Well-formed JSON that Postgres refuses (jsonb cannot hold \u0000; a non-existent date).
      JSON.stringify({ ...domainEvent(t), related: { name: "nul\u0000byte" } }),
      JSON.stringify({ ...domainEvent(t), created_at: "2026-02-30T10:00:00Z" }),
    );
    await h.publish(base);
    const feed = await h.waitForFeed(t, 1);
    expect(feed.map((e) => e.id)).toEqual([base.id]);
    expect(await h.sequences(feed)).toEqual([1]);
    const next = domainEvent(t);
    await h.publish(next);
    const after = await h.waitForFeed(t, 2);
    expect(after.map((e) => e.id)).toEqual([base.id, next.id]);
    expect(await h.sequences(after)).toEqual([1, 2]);
  });
});

describe("EventsRepository.append under concurrency", () => {
  it("numbers concurrent appends 1..n without gaps and stores a racing duplicate once", async () => {
    const db = createDb<EventsDB>({
      url: h.db.url,
      schema: EVENTS_SCHEMA,
      applicationName: "events-test",
      max: 8,
    });
    try {
      const repo = new EventsRepository(db);
      const t = test_();
      const events = Array.from({ length: 40 }, () => domainEvent(t));
      const dup = domainEvent(t);
      const results = await Promise.all([
        ...events.map((e) => repo.append(e)),
        ...Array.from({ length: 5 }, () => repo.append(dup)),
      ]);
      const dupResults = results.slice(events.length);
      expect(dupResults.filter((r) => r.status === "appended")).toHaveLength(1);
      const page = await repo.list({ requestId: "req_test", ...t }, { after: 0, types: [], limit: 100 });
      expect(page.events.map((e) => e.sequence)).toEqual(Array.from({ length: 41 }, (_, i) => i + 1));
      expect(new Set(page.events.map((e) => e.id)).size).toBe(41);
      const counter = await db
        .selectFrom("feed_counter")
        .select("last_sequence")
        .where("organization_id", "=", t.organizationId)
        .where("livemode", "=", false)
        .executeTakeFirstOrThrow();
      expect(counter.last_sequence).toBe(41);
    } finally {
      await db.destroy();
    }
  });
});
