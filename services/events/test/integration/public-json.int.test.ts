/**
 * Each event's public JSON, rendered once when it is appended: the text the feed now answers must be the very
 * text the API answered when it built the event from the stored columns on every read (messages mapped as the
 * gateway maps them, below as `answeredFromColumns`), whatever `related` and `created_at` hold; the SQL that
 * renders the rows stored before the column existed (migration 0003) and the rows a previous version of the
 * service appends without it must give the same text; and a page read as texts is the page read as messages
 * (same events, has_more, cursor, filters, tenant).
 */
import { create } from "@bufbuild/protobuf";
import { sql, type Kysely } from "kysely";
import type { DomainEvent } from "@dpp/contract";
import { createDb, migrateSchema } from "@dpp/kit/internal";
import { createTestDatabase, type TestDatabase } from "@dpp/kit/testing";
import { eventsV1, timestampDate } from "@dpp/proto";
import { eventsMigrations } from "../../migrations";
import { eventPublicJson } from "../../src/domain/event-json";
import { toProtoEvent } from "../../src/rpc/events.rpc";
import { EventsRepository } from "../../src/store/events.repository";
import { EVENTS_SCHEMA, type EventsDB } from "../../src/store/schema";
import { domainEvent, newOrg, startHarness, type Harness, type Tenant } from "../harness";

/** What the API answered for an event message (the gateway's mapping before the texts, and JSON.stringify). */
function answeredFromColumns(e: eventsV1.Event): string {
  return JSON.stringify({
    object: "event",
    id: e.id,
    name: `organizations/${e.organizationId}/events/${e.id}`,
    organization_id: e.organizationId,
    type: e.type,
    livemode: e.livemode,
    created_at: timestampDate(e.createdAt!).toISOString(),
    related: e.relatedJson ? JSON.parse(e.relatedJson) : {},
  });
}

/** A deterministic stream of doubles of every magnitude (mulberry32), finite only. */
function doubles(seed: number, n: number): number[] {
  let a = seed;
  const u32 = () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return (t ^ (t >>> 14)) >>> 0;
  };
  const out: number[] = [];
  const bits = new DataView(new ArrayBuffer(8));
  while (out.length < n) {
    if (out.length % 2 === 0) {
      // any bit pattern: every exponent, subnormals included
      bits.setUint32(0, u32());
      bits.setUint32(4, u32());
      const x = bits.getFloat64(0);
      if (Number.isFinite(x)) out.push(x);
    } else {
      // everyday magnitudes, 1e-12 to 1e24
      out.push(((u32() / 2 ** 32 - 0.5) * 10 ** ((u32() % 36) - 12)) as number);
    }
  }
  return out;
}

const NUMBERS = [
  0,
  -0,
  1,
  -1,
  1.5,
  0.1,
  0.3,
  100,
  1e15,
  1e16,
  123.456,
  1e21,
  1e-6,
  1e-7,
  1.5e-7,
  -2.5e-10,
  0.000001234,
  9.999999999999999e20,
  123456789012345680000,
  2 ** 53 + 2,
  5e-324,
  1.7976931348623157e308,
  2 ** 31,
  4294967295,
];

const STRING = 'quote" back\\slash /solidus \b\f\n\r\t \u0001\u001f del\u007f \u2028\u2029 é 中 😀 <script>';

/** Events whose `related` and `created_at` exercise every part of the rendering. */
function corpus(t: Tenant): DomainEvent[] {
  const base = domainEvent(t);
  const make = (
    created_at: string,
    related: Record<string, unknown>,
    type = "passport.updated",
  ): DomainEvent => ({
    ...domainEvent(t, type),
    created_at,
    related,
  });
  const keys = JSON.parse(
    '{"b":1,"aa":2,"a":3,"10":4,"2":5,"01":6,"4294967294":7,"4294967295":8,"-1":9,"1.5":10,"é":11,"z":12,' +
      '"😀":13,"__proto__":{"x":1},"":0,"A":14,"Z":15,"ab":16,"ba":17}',
  ) as Record<string, unknown>;
  return [
    { ...base, created_at: "2026-11-21T10:00:00.123Z" },
    make("2026-11-21T10:00:00Z", keys),
    make("2026-11-21T10:00:00.1239995Z", {
      list: [{ b: 1, a: 2 }, [3, [4, { d: [], c: {} }]], null, true, false, "s"],
      deep: { k: { j: { i: [] } } },
      empty: {},
    }),
    make("2026-11-21T10:00:00.9999996Z", { s: STRING, [STRING]: "key with every escape" }),
    make("2026-11-21T10:00:00.0000015Z", { numbers: NUMBERS }),
    make("2026-11-21T10:00:00.5+05:30", { random: doubles(7, 400) }),
    make("2026-11-21t10:00:00.999z", { random: doubles(11, 400) }),
    make("2026-12-31T23:59:59.9999999-14:00", { version: 3, status: "published", previous_status: null }),
    make("9999-12-31T23:59:59.999-14:00", { far: "year 10000 in UTC" }),
    make("0001-01-01T00:00:00.001+01:00", { far: "1 BC in UTC" }),
    make("0099-06-01T00:00:00.25Z", { year: 99 }),
    make("1969-12-31T23:59:59.9995Z", { before: "the epoch" }),
    make("2024-01-01T24:00:00Z", { hour: 24 }),
    make("2026-11-21T10:00:00.123456789+00:00", { nanoseconds: true }, "document.created"),
  ];
}

let h: Harness;
let db: Kysely<EventsDB>;

beforeAll(async () => {
  h = await startHarness("events_public_json");
  db = createDb<EventsDB>({
    url: h.db.url,
    schema: EVENTS_SCHEMA,
    applicationName: "events-json-test",
    max: 1,
  });
});

afterAll(async () => {
  await db?.destroy();
  await h?.close();
});

const readAll = async (t: Tenant, asJson: boolean) => h.list(t, { limit: 100, asJson });

/** ListEventsResponse.page_json as text. */
const pageText = (res: eventsV1.ListEventsResponse) => Buffer.from(res.pageJson).toString("utf8");

/** The SQL rendering of the tenant's stored rows, by event id, next to the stored text. */
async function renderedInSql(t: Tenant) {
  const { rows } = await sql<{ event_id: string; stored: string; in_sql: string }>`
    select event_id, public_json as stored,
           event_public_json(event_id, organization_id, type, livemode, created_at, related) as in_sql
    from event where organization_id = ${t.organizationId} and livemode = ${t.livemode}
    order by sequence`.execute(db);
  return rows;
}

describe("an event's public JSON, rendered when it is appended", () => {
  const t: Tenant = { organizationId: newOrg(), livemode: true };
  const sent = corpus(t);

  beforeAll(async () => {
    await h.publish(...sent);
    await h.waitForFeed(t, sent.length);
  });

  it("is the text the API answered from the columns, for every event", async () => {
    const texts = await readAll(t, true);
    const messages = await readAll(t, false);
    expect(texts.events).toEqual([]);
    expect(messages.eventJson).toEqual([]);
    expect(texts.eventJson).toHaveLength(sent.length);
    expect(texts.eventJson).toEqual(messages.events.map(answeredFromColumns));
    expect(texts.eventJson.map((j) => (JSON.parse(j) as { id: string }).id)).toEqual(sent.map((e) => e.id));
    // Joined by Postgres, the texts keep every byte: the corpus' escapes and non-ASCII text.
    expect(pageText(await h.list(t, { limit: 100, asPage: true }))).toBe(`[${texts.eventJson.join(",")}]`);
  });

  it("is the text the migration's SQL renders from the stored columns", async () => {
    const rows = await renderedInSql(t);
    expect(rows).toHaveLength(sent.length);
    for (const r of rows)
      expect({ id: r.event_id, json: r.in_sql }).toEqual({ id: r.event_id, json: r.stored });
  });

  it("is filled by the database, identically, for a row a previous version appends without it", async () => {
    const old: Tenant = { organizationId: newOrg(), livemode: false };
    const events = corpus(old);
    // The previous version's insert: no public_json column.
    await sql`
      insert into event (organization_id, livemode, sequence, event_id, type, created_at, related)
      select ${old.organizationId}, ${old.livemode}, n, e.event_id, e.type, e.created_at::timestamptz, e.related::jsonb
      from unnest(${events.map((e) => e.id)}::text[], ${events.map((e) => e.type)}::text[],
                  ${events.map((e) => e.created_at)}::text[], ${events.map((e) => JSON.stringify(e.related))}::text[])
        with ordinality as e(event_id, type, created_at, related, n)`.execute(db);
    const texts = await readAll(old, true);
    expect(texts.eventJson).toEqual(events.map((e) => eventPublicJson(e)));
    expect(texts.eventJson).toEqual((await readAll(old, false)).events.map(answeredFromColumns));
  });

  it("is rendered for the events of a batch appended one by one after the database refused one of them", async () => {
    const t2: Tenant = { organizationId: newOrg(), livemode: true };
    const good = corpus(t2).slice(0, 4);
    // jsonb refuses \u0000: the batch fails and its events are appended one by one.
    const refused = domainEvent(t2, "passport.created", { name: "nul\u0000byte" });
    await h.publish(good[0]!, good[1]!, refused, good[2]!, good[3]!);
    await h.waitForFeed(t2, good.length);
    const texts = await readAll(t2, true);
    expect(texts.eventJson).toEqual(good.map((e) => eventPublicJson(e)));
    expect(texts.eventJson).toEqual((await readAll(t2, false)).events.map(answeredFromColumns));
  });
});

describe("a page read as texts", () => {
  const org = newOrg();
  const live: Tenant = { organizationId: org, livemode: true };
  const test: Tenant = { organizationId: org, livemode: false };
  const other: Tenant = { organizationId: newOrg(), livemode: true };
  const types = ["passport.created", "passport.updated", "passport.published", "document.created"];
  const sent = Array.from({ length: 23 }, (_, i) => domainEvent(live, types[i % types.length]!, { n: i }));

  beforeAll(async () => {
    await h.publish(...sent, domainEvent(test), domainEvent(other));
    await h.waitForFeed(live, sent.length);
    await h.waitForFeed(test, 1);
    await h.waitForFeed(other, 1);
  });

  /**
   * Walks the feed with the three forms side by side; each page's texts must be its messages' texts, and its
   * array text those texts joined, with the same has_more and cursor.
   */
  async function walk(req: { limit: number; types?: string[] }) {
    const ids: string[] = [];
    const hasMore: boolean[] = [];
    let cursor = "";
    for (let i = 0; i < 30; i++) {
      const asText = await h.list(live, { ...req, cursor, asJson: true });
      const asMessages = await h.list(live, { ...req, cursor });
      const asPage = await h.list(live, { ...req, cursor, asJson: true, asPage: true });
      expect(asText.eventJson).toEqual(asMessages.events.map(answeredFromColumns));
      expect([asText.hasMore, asText.nextCursor]).toEqual([asMessages.hasMore, asMessages.nextCursor]);
      expect(pageText(asPage)).toBe(`[${asText.eventJson.join(",")}]`);
      expect([asPage.events, asPage.eventJson]).toEqual([[], []]);
      expect([asPage.hasMore, asPage.nextCursor]).toEqual([asText.hasMore, asText.nextCursor]);
      ids.push(...asText.eventJson.map((j) => (JSON.parse(j) as { id: string }).id));
      hasMore.push(asText.hasMore);
      cursor = asText.nextCursor;
      if (!asText.hasMore) break;
    }
    return { ids, hasMore };
  }

  it("pages with the same cursor and has_more as messages, oldest first", async () => {
    const { ids, hasMore } = await walk({ limit: 5 });
    expect(ids).toEqual(sent.map((e) => e.id));
    expect(hasMore).toEqual([true, true, true, true, false]);
  });

  it("filters by types as messages do", async () => {
    const filter = ["passport.updated", "document.created"];
    const { ids } = await walk({ limit: 4, types: filter });
    expect(ids).toEqual(sent.filter((e) => filter.includes(e.type)).map((e) => e.id));
    const one = await walk({ limit: 100, types: ["passport.published"] });
    expect(one.ids).toEqual(sent.filter((e) => e.type === "passport.published").map((e) => e.id));
  });

  it("answers an empty page as [] with the position it was asked from, and a feed without events as []", async () => {
    const all = await h.list(live, { limit: 100, asPage: true });
    expect(JSON.parse(pageText(all))).toHaveLength(sent.length);
    const after = await h.list(live, { limit: 100, cursor: all.nextCursor, asPage: true });
    expect([pageText(after), after.hasMore, after.nextCursor]).toEqual(["[]", false, all.nextCursor]);
    const none = await h.list(live, { types: ["unit.created"], asPage: true });
    expect([pageText(none), none.hasMore]).toEqual(["[]", false]);
    const nobody = await h.list({ organizationId: newOrg(), livemode: true }, { asPage: true });
    expect([pageText(nobody), nobody.hasMore]).toEqual(["[]", false]);
    expect(nobody.nextCursor).not.toBe("");
  });

  it("holds only the tenant's events: the organization's other mode and other organizations stay out", async () => {
    for (const tenant of [live, test, other]) {
      const texts = (await h.list(tenant, { limit: 100, asJson: true })).eventJson;
      const page = JSON.parse(pageText(await h.list(tenant, { limit: 100, asPage: true }))) as unknown[];
      expect(page).toEqual(texts.map((j) => JSON.parse(j) as unknown));
      const owners = texts.map((j) => {
        const e = JSON.parse(j) as { organization_id: string; livemode: boolean };
        return [e.organization_id, e.livemode];
      });
      expect(owners.length).toBe(tenant === live ? sent.length : 1);
      expect(new Set(owners.map((o) => JSON.stringify(o)))).toEqual(
        new Set([JSON.stringify([tenant.organizationId, tenant.livemode])]),
      );
    }
  });

  it("is read by a query that filters organization and mode in every branch", () => {
    const repo = new EventsRepository(db);
    const tenant = { requestId: "req_q", ...live };
    for (const typesOf of [
      [],
      ["passport.created"],
      ["passport.created", "passport.updated", "unit.created"],
    ]) {
      for (const query of [
        repo.listJsonQuery(tenant, { after: 0, types: typesOf, limit: 10 }),
        repo.listQuery(tenant, { after: 0, types: typesOf, limit: 10 }),
      ]) {
        const compiled = query.compile();
        const branches = Math.max(1, typesOf.length);
        expect(compiled.sql.match(/"organization_id" = \$\d+/g)).toHaveLength(branches);
        expect(compiled.sql.match(/"livemode" = \$\d+/g)).toHaveLength(branches);
        expect(compiled.parameters.filter((p) => p === live.organizationId)).toHaveLength(branches);
      }
    }
  });
});

describe("the migration that adds the column", () => {
  let tdb: TestDatabase;
  let old: Kysely<EventsDB>;

  beforeAll(async () => {
    tdb = await createTestDatabase("events_backfill");
    old = createDb<EventsDB>({
      url: tdb.url,
      schema: EVENTS_SCHEMA,
      applicationName: "events-backfill",
      max: 1,
    });
  });

  afterAll(async () => {
    await old?.destroy();
    await tdb?.drop();
  });

  it("renders the rows stored before it as the API answered them and as the service renders them", async () => {
    const before = Object.fromEntries(
      Object.entries(eventsMigrations).filter(([name]) => name < "0003_public_json"),
    );
    expect(await migrateSchema(old, EVENTS_SCHEMA, before)).toEqual(["0001_init", "0002_retention"]);
    const tenants: Tenant[] = [
      { organizationId: newOrg(), livemode: true },
      { organizationId: newOrg(), livemode: false },
    ];
    const events = tenants.flatMap(corpus);
    // Stored as the service stored them before the column: the insert of its append, from the same texts.
    await sql`
      insert into event (organization_id, livemode, sequence, event_id, type, created_at, related)
      select organization_id, livemode, row_number() over (partition by organization_id, livemode order by n),
             event_id, type, created_at::timestamptz, related::jsonb
      from unnest(${events.map((e) => e.id)}::text[], ${events.map((e) => e.organization_id)}::text[],
                  ${events.map((e) => e.livemode)}::boolean[], ${events.map((e) => e.type)}::text[],
                  ${events.map((e) => e.created_at)}::text[], ${events.map((e) => JSON.stringify(e.related))}::text[])
        with ordinality as b(event_id, organization_id, livemode, type, created_at, related, n)`.execute(old);
    const repo = new EventsRepository(old);
    // What the API answered from these rows before the migration.
    const answered = new Map<string, string>();
    for (const t of tenants) {
      const page = await repo.list({ requestId: "req_b", ...t }, { after: 0, types: [], limit: 100 });
      for (const e of page.events)
        answered.set(e.id, answeredFromColumns(create(eventsV1.EventSchema, toProtoEvent(e))));
    }
    expect(answered.size).toBe(events.length);

    expect(await migrateSchema(old, EVENTS_SCHEMA, eventsMigrations)).toEqual(["0003_public_json"]);
    for (const t of tenants) {
      const page = await repo.listJson({ requestId: "req_b", ...t }, { after: 0, types: [], limit: 100 });
      const mine = events.filter((e) => e.organization_id === t.organizationId);
      expect(page.events.map((e) => e.json)).toEqual(mine.map((e) => answered.get(e.id)));
      expect(page.events.map((e) => e.json)).toEqual(mine.map((e) => eventPublicJson(e)));
    }
    const { rows } = await sql<{
      n: number;
    }>`select count(*)::int as n from event where public_json is null`.execute(old);
    expect(rows[0]!.n).toBe(0);
  });
});
