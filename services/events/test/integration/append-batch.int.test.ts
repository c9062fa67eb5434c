/**
 * Appending a consumed batch in one transaction: duplicates (inside the batch
 * and against stored rows) never consume a sequence number, several feeds in
 * one batch are each numbered from their own counter, an event the database
 * refuses as data does not keep the rest of its batch out, and two consumers
 * appending overlapping batches at once store each event once, without gaps.
 */
import { createLogger } from "@dpp/kit";
import { createDb, migrateService } from "@dpp/kit/internal";
import { createTestDatabase, type TestDatabase } from "@dpp/kit/testing";
import type { Kysely } from "kysely";
import type { DomainEvent } from "@dpp/contract";
import { createFeedHandler } from "../../src/consumer/feed.consumer";
import { eventsService } from "../../src/service";
import { EventsRepository } from "../../src/store/events.repository";
import { EVENTS_SCHEMA, type EventsDB } from "../../src/store/schema";
import { domainEvent, newOrg, type Tenant } from "../harness";

let tdb: TestDatabase;
let db: Kysely<EventsDB>;
let other: Kysely<EventsDB>;
let repo: EventsRepository;

beforeAll(async () => {
  tdb = await createTestDatabase("events_batch");
  await migrateService(eventsService, { DATABASE_URL: tdb.url });
  const open = (name: string) =>
    createDb<EventsDB>({ url: tdb.url, schema: EVENTS_SCHEMA, applicationName: name, max: 3 });
  db = open("events-batch-a");
  other = open("events-batch-b");
  repo = new EventsRepository(db);
});

afterAll(async () => {
  await db?.destroy();
  await other?.destroy();
  await tdb?.drop();
});

/** The stored feed of a tenant: [event id, sequence] in sequence order. */
async function feed(t: Tenant): Promise<Array<[string, number]>> {
  const rows = await db
    .selectFrom("event")
    .select(["event_id", "sequence"])
    .where("organization_id", "=", t.organizationId)
    .where("livemode", "=", t.livemode)
    .orderBy("sequence")
    .execute();
  return rows.map((r) => [r.event_id, r.sequence]);
}

const numbered = (events: DomainEvent[], from = 1) =>
  events.map((e, i): [string, number] => [e.id, from + i]);

describe("EventsRepository.appendBatch", () => {
  it("drops duplicates inside the batch and against stored rows without consuming sequence numbers", async () => {
    const t = { organizationId: newOrg(), livemode: false };
    const [a, b, c, d] = [domainEvent(t), domainEvent(t), domainEvent(t), domainEvent(t)];
    expect(await repo.appendBatch([a!, b!])).toEqual([
      { status: "appended", sequence: 1 },
      { status: "appended", sequence: 2 },
    ]);
    // b is stored already, c comes twice, a again: only c and d are new.
    expect(await repo.appendBatch([b!, c!, a!, c!, d!])).toEqual([
      { status: "duplicate" },
      { status: "appended", sequence: 3 },
      { status: "duplicate" },
      { status: "duplicate" },
      { status: "appended", sequence: 4 },
    ]);
    expect(await repo.appendBatch([d!, a!])).toEqual([{ status: "duplicate" }, { status: "duplicate" }]);
    const e = domainEvent(t);
    expect(await repo.append(e)).toEqual({ status: "appended", sequence: 5 });
    expect(await feed(t)).toEqual(numbered([a!, b!, c!, d!, e]));
  });

  it("numbers each (organization, mode) feed of one batch from its own counter, in batch order", async () => {
    const org1 = newOrg();
    const org2 = newOrg();
    const feeds: Tenant[] = [
      { organizationId: org1, livemode: false },
      { organizationId: org1, livemode: true },
      { organizationId: org2, livemode: false },
      { organizationId: org2, livemode: true },
    ];
    // org1 test mode already holds two events.
    const earlier = [domainEvent(feeds[0]!), domainEvent(feeds[0]!)];
    await repo.appendBatch(earlier);
    const batch = Array.from({ length: 12 }, (_, i) => domainEvent(feeds[(i * 3) % 4]!));
    const results = await repo.appendBatch(batch);
    expect(results.every((r) => r.status === "appended")).toBe(true);
    for (const [i, t] of feeds.entries()) {
      const mine = batch.filter((e) => e.organization_id === t.organizationId && e.livemode === t.livemode);
      expect(mine).toHaveLength(3);
      expect(await feed(t)).toEqual(i === 0 ? [...numbered(earlier), ...numbered(mine, 3)] : numbered(mine));
    }
  });

  it("two consumers appending overlapping batches at once store every event once, without gaps", async () => {
    const tenants: Tenant[] = [
      { organizationId: newOrg(), livemode: false },
      { organizationId: newOrg(), livemode: true },
      { organizationId: newOrg(), livemode: false },
    ];
    const events = Array.from({ length: 300 }, (_, i) => domainEvent(tenants[i % 3]!));
    const a = new EventsRepository(db);
    const b = new EventsRepository(other);
    // Each consumer walks the events in batches of 20; b starts 10 events behind and goes backwards through
    // its own batches, so the two overlap all the time in both orders.
    const batches = (offset: number) =>
      Array.from({ length: 16 }, (_, i) => events.slice(Math.max(0, i * 20 - offset), i * 20 + 20 - offset));
    const runA = (async () => {
      for (const batch of batches(0)) await a.appendBatch(batch);
    })();
    const runB = (async () => {
      for (const batch of batches(10).reverse()) await b.appendBatch(batch);
    })();
    await Promise.all([runA, runB]);
    for (const t of tenants) {
      const stored = await feed(t);
      const mine = events.filter((e) => e.organization_id === t.organizationId);
      expect(stored.map(([, s]) => s)).toEqual(mine.map((_, i) => i + 1));
      expect(new Set(stored.map(([id]) => id))).toEqual(new Set(mine.map((e) => e.id)));
    }
  });
});

describe("the feed consumer on the real store", () => {
  it("skips an event the database refuses as data in the middle of a batch and appends the others", async () => {
    const t = { organizationId: newOrg(), livemode: false };
    const good1 = domainEvent(t);
    // jsonb refuses \u0000 in a string (SQLSTATE 22P05), although it is valid JSON.
    const refused = domainEvent(t, "passport.created", { name: "nul\u0000byte" });
    const good2 = domainEvent(t);
    const warnings: unknown[] = [];
    const log = createLogger("events-batch-test", "silent");
    const spy = Object.assign(Object.create(log) as typeof log, {
      warn: (...a: unknown[]) => warnings.push(a[0]),
      child: () => spy,
    });
    const handler = createFeedHandler(repo, spy);
    await handler([good1, refused, good2].map((e) => ({ key: e.organization_id, value: JSON.stringify(e) })));
    expect(await feed(t)).toEqual(numbered([good1, good2]));
    expect(warnings).toEqual([expect.objectContaining({ event_id: refused.id })]);
  });
});
