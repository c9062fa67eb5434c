/**
 * The feed query's plan must not depend on statistics: on a table migrated
 * (left unanalyzed while empty) and then filled without ANALYZE, as on a machine
 * whose autovacuum is off, each page still reads an index in sequence order,
 * never a sort or a scan of the table. EXPLAIN runs the very queries the
 * repository builds (the page as columns, as stored texts, and as the one
 * array text Postgres joins them into), under the settings it runs them with.
 */
import { sql, type Kysely } from "kysely";
import { createDb, migrateService } from "@dpp/kit/internal";
import { createTestDatabase, type TestDatabase } from "@dpp/kit/testing";
import { eventsService } from "../../src/service";
import { EventsRepository, type FeedQuery } from "../../src/store/events.repository";
import { EVENTS_SCHEMA, type EventsDB } from "../../src/store/schema";

let tdb: TestDatabase;
let db: Kysely<EventsDB>;
let repo: EventsRepository;

interface PlanNode {
  "Node Type": string;
  "Parent Relationship"?: string;
  Strategy?: string;
  "Index Name"?: string;
  "Relation Name"?: string;
  Plans?: PlanNode[];
}

const tenant = { requestId: "req_plan", organizationId: "org_plan3", livemode: true };

const nodes = (n: PlanNode): PlanNode[] => [n, ...(n.Plans ?? []).flatMap(nodes)];

beforeAll(async () => {
  tdb = await createTestDatabase("events_plan");
  await migrateService(eventsService, { DATABASE_URL: tdb.url });
  db = createDb<EventsDB>({ url: tdb.url, schema: EVENTS_SCHEMA, applicationName: "events-plan", max: 1 });
  // 6 organizations × 2 modes, 5,000 events each, one type in five an update; no ANALYZE afterwards. The
  // public JSON is a stand-in of its size: the plans do not look at it.
  await sql`
    insert into event (organization_id, livemode, sequence, event_id, type, created_at, related, public_json)
    select 'org_plan' || (g % 6), (g / 6) % 2 = 0, g / 12 + 1, 'evt_plan_' || g,
           case when g % 5 = 0 then 'passport.updated' else 'passport.created' end, now(),
           jsonb_build_object('object', 'passport', 'id', 'pp_' || g, 'status', 'draft', 'version', 1),
           '{"object":"event","id":"evt_plan_' || g || '","related":{"id":"pp_' || g || '"}}' || repeat(' ', 200)
    from generate_series(0, 59999) g`.execute(db);
  const { rows } = await sql<{ n: number }>`
    select count(*)::int as n from pg_stats where schemaname = ${EVENTS_SCHEMA} and tablename = 'event'`.execute(
    db,
  );
  expect(rows[0]!.n).toBe(0); // no column statistics: the planner has only its defaults
  repo = new EventsRepository(db);
});

afterAll(async () => {
  await db?.destroy();
  await tdb?.drop();
});

type Form = "listQuery" | "listJsonQuery";
const forms: Form[] = ["listQuery", "listJsonQuery"];

async function plan(form: Form, q: FeedQuery): Promise<PlanNode[]> {
  const compiled = repo[form](tenant, q).compile();
  const { rows } = await db.executeQuery<{ "QUERY PLAN": Array<{ Plan: PlanNode }> }>({
    ...compiled,
    sql: `explain (format json) ${compiled.sql}`,
  });
  return nodes(rows[0]!["QUERY PLAN"][0]!.Plan);
}

const scansOfEvent = (ns: PlanNode[]) => ns.filter((n) => n["Relation Name"] === "event");
/** An index read in order, stopping where the plan stops it: an index scan, or index only (a read of `sequence`). */
const indexReads = (ns: PlanNode[]) =>
  scansOfEvent(ns).map((n) => [n["Node Type"].replace("Index Only Scan", "Index Scan"), n["Index Name"]]);
const times = <T>(n: number, x: T): T[] => Array.from({ length: n }, () => x);

describe("the feed query's plan on a table without statistics", () => {
  it.each(forms.flatMap((f) => [0, 2_500].map((after) => [f, after] as const)))(
    "%s reads the page after %i through the primary key in order",
    async (form, after) => {
      const ns = await plan(form, { after, types: [], limit: 100 });
      expect(ns.map((n) => n["Node Type"])).not.toContain("Sort");
      expect(indexReads(ns)).toEqual(times(1, ["Index Scan", "event_pk"]));
    },
  );

  it.each(forms)("%s reads one type through the type index in order", async (form) => {
    const ns = await plan(form, { after: 0, types: ["passport.updated"], limit: 100 });
    expect(ns.map((n) => n["Node Type"])).not.toContain("Sort");
    expect(indexReads(ns)).toEqual(times(1, ["Index Scan", "event_type_idx"]));
  });

  it.each(forms)(
    "%s reads several types through the type index in order, one bounded read per type, merged",
    async (form) => {
      const ns = await plan(form, {
        after: 0,
        types: ["passport.updated", "passport.created", "passport.trashed"],
        limit: 100,
      });
      const types = ns.map((n) => n["Node Type"]);
      expect(types).not.toContain("Sort");
      expect(types.filter((t) => t === "Merge Append")).toHaveLength(1);
      expect(indexReads(ns)).toEqual(times(3, ["Index Scan", "event_type_idx"]));
    },
  );

  it("serves the page the plan reads: oldest first, limit + 1 rows for has-more", async () => {
    const page = await repo.list(tenant, { after: 10, types: [], limit: 100 });
    expect(page.events.map((e) => e.sequence)).toEqual(Array.from({ length: 100 }, (_, i) => 11 + i));
    expect(page.hasMore).toBe(true);
    const typed = await repo.list(tenant, {
      after: 0,
      types: ["passport.updated", "passport.created"],
      limit: 3,
    });
    expect(typed.events.map((e) => e.sequence)).toEqual([1, 2, 3]);
    const texts = await repo.listJson(tenant, { after: 10, types: [], limit: 100 });
    expect(texts.events.map((e) => e.sequence)).toEqual(page.events.map((e) => e.sequence));
    expect(texts.hasMore).toBe(true);
    const joined = await repo.listPage(tenant, { after: 10, types: [], limit: 100 });
    expect(joined.json.toString("utf8")).toBe(`[${texts.events.map((e) => e.json).join(",")}]`);
    expect([joined.hasMore, joined.lastSequence]).toEqual([true, 110]);
    const typedPage = await repo.listPage(tenant, {
      after: 0,
      types: ["passport.updated", "passport.created"],
      limit: 3,
    });
    expect((JSON.parse(typedPage.json.toString()) as Array<{ id: string }>).map((e) => e.id)).toEqual(
      typed.events.map((e) => e.id),
    );
    expect([typedPage.hasMore, typedPage.lastSequence]).toEqual([true, 3]);
  });

  it("serves a last page without has-more, and an empty page as [] without a last sequence", async () => {
    const text = async (q: FeedQuery) => {
      const p = await repo.listPage(tenant, q);
      return { json: p.json.toString("utf8"), hasMore: p.hasMore, lastSequence: p.lastSequence };
    };
    const last = await text({ after: 4_900, types: [], limit: 100 });
    expect((JSON.parse(last.json) as unknown[]).length).toBe(100);
    expect([last.hasMore, last.lastSequence]).toEqual([false, 5_000]);
    const beforeLast = await text({ after: 4_899, types: [], limit: 100 });
    expect([beforeLast.hasMore, beforeLast.lastSequence]).toEqual([true, 4_999]);
    const empty = { json: "[]", hasMore: false, lastSequence: null };
    expect(await text({ after: 5_000, types: [], limit: 100 })).toEqual(empty);
    expect(await text({ after: 0, types: ["passport.trashed"], limit: 100 })).toEqual(empty);
    expect(await text({ after: 0, types: ["passport.trashed", "passport.deleted"], limit: 100 })).toEqual(
      empty,
    );
  });
});
