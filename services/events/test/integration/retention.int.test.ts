/** Feed retention: old events go, sequences are never reused, cursors keep reading forward. */
import { createDb } from "@dpp/kit/internal";
import type { Kysely } from "kysely";
import { EventsRepository } from "../../src/store/events.repository";
import { expireFeedEvents } from "../../src/store/feed-retention";
import { EVENTS_SCHEMA, type EventsDB } from "../../src/store/schema";
import { domainEvent, newOrg, startHarness, type Harness, type Tenant } from "../harness";

let h: Harness;
let db: Kysely<EventsDB>;

beforeAll(async () => {
  h = await startHarness("events_retention");
  db = createDb<EventsDB>({
    url: h.db.url,
    schema: EVENTS_SCHEMA,
    applicationName: "retention-test",
    max: 3,
  });
});

afterAll(async () => {
  await db?.destroy();
  await h?.close();
});

async function age(tenant: Tenant, upToSequence: number, days: number): Promise<void> {
  await db
    .updateTable("event")
    .set({ received_at: new Date(Date.now() - days * 86_400_000) })
    .where("organization_id", "=", tenant.organizationId)
    .where("livemode", "=", tenant.livemode)
    .where("sequence", "<=", upToSequence)
    .execute();
}

describe("feed retention", () => {
  it("runs as the service's leader job: one pass deletes what is due", async () => {
    const t: Tenant = { organizationId: newOrg(), livemode: false };
    await h.publish(domainEvent(t), domainEvent(t));
    await h.waitForFeed(t, 2);
    await age(t, 1, 91);
    expect(h.service.extra.retention).toBeDefined();
    const outcome = await h.service.extra.retention!.runOnce();
    expect(outcome).toEqual({ ran: true, work: 1 });
    expect(await h.sequences((await h.list(t)).events)).toEqual([2]);
  });

  it("deletes events older than the retention in chunks, keeps the rest, and never reuses a sequence", async () => {
    const t: Tenant = { organizationId: newOrg(), livemode: false };
    const other: Tenant = { organizationId: newOrg(), livemode: true };
    const first = Array.from({ length: 7 }, () => domainEvent(t));
    await h.publish(...first, domainEvent(other));
    await h.waitForFeed(t, 7);
    await h.waitForFeed(other, 1);
    // A cursor an integrator saved after sequence 2, before retention ran.
    const saved = (await h.list(t, { limit: 2 })).nextCursor;
    await age(t, 5, 91);
    await age(other, 1, 89);

    const repo = new EventsRepository(db);
    expect(await expireFeedEvents(repo, 90, 2)).toBe(5);
    expect(await expireFeedEvents(repo, 90, 2)).toBe(0);

    const feed = await h.list(t);
    expect(await h.sequences(feed.events)).toEqual([6, 7]);
    expect(feed.events.map((e) => e.id)).toEqual([first[5]!.id, first[6]!.id]);
    // The other tenant's 89-day-old event stays.
    expect((await h.list(other)).events).toHaveLength(1);

    // The saved cursor points into the deleted range: it reads forward from the oldest kept event.
    const resumed = await h.list(t, { cursor: saved });
    expect(await h.sequences(resumed.events)).toEqual([6, 7]);

    // New events continue the numbering.
    const next = domainEvent(t);
    await h.publish(next);
    const after = await h.waitForFeed(t, 3);
    expect(after.map((e) => e.id)).toEqual([first[5]!.id, first[6]!.id, next.id]);
    expect(await h.sequences(after)).toEqual([6, 7, 8]);
  });

  it("does nothing when retention is off (0 days)", async () => {
    const t: Tenant = { organizationId: newOrg(), livemode: false };
    await h.publish(domainEvent(t));
    await h.waitForFeed(t, 1);
    await age(t, 1, 10_000);
    expect(await expireFeedEvents(new EventsRepository(db), 0)).toBe(0);
    expect((await h.list(t)).events).toHaveLength(1);
  });
});
