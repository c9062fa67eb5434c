/**
 * The plans of the store's lookups and lists do not depend on table statistics: on a fresh schema that
 * has never been analyzed, with passports of several organizations in both modes, every lookup and every
 * page of a list reads through its index, and a list in its order (newest id first) is read in index order,
 * without a Seq Scan or a Sort of the passport table. The same holds once the table is analyzed.
 *
 * The queries are the ones the store builds: the store runs on a connection that records each compiled
 * query, and the test asks Postgres to EXPLAIN exactly that text with those parameters.
 */
import { Kysely, PostgresDialect, sql, type CompiledQuery } from "kysely";
import { createPool, migrateDatabase } from "@dpp/kit/internal";
import { createTestDatabase, type TestDatabase } from "@dpp/kit/testing";
import { migrations } from "../../migrations";
import { PASSPORT_SCHEMA } from "../../src/service";
import { PassportStore } from "../../src/store";
import type { PassportDB } from "../../src/store/schema";

/** One node of an EXPLAIN (FORMAT JSON) plan. */
interface PlanNode {
  "Node Type": string;
  "Relation Name"?: string;
  "Index Name"?: string;
  "Scan Direction"?: string;
  Plans?: PlanNode[];
}

const nodes = (n: PlanNode): PlanNode[] => [n, ...(n.Plans ?? []).flatMap(nodes)];

let database: TestDatabase;
let db: Kysely<PassportDB>;
let store: PassportStore;
const compiled: CompiledQuery[] = [];

/** The organizations: one large, the others smaller; each has passports in both modes. */
const ORGS = ["org_large", "org_b", "org_c", "org_d", "org_e", "org_f"];
const big = { organizationId: "org_large", livemode: true };

beforeAll(async () => {
  database = await createTestDatabase("passport_plans");
  await migrateDatabase(database.url, PASSPORT_SCHEMA, migrations);
  db = new Kysely<PassportDB>({
    dialect: new PostgresDialect({
      pool: createPool({ url: database.url, schema: PASSPORT_SCHEMA, applicationName: "plans", max: 1 }),
    }),
    log: (e) => {
      if (e.level === "query") compiled.push(e.query);
    },
  });
  store = new PassportStore(db);
  // No statistics, whatever the autovacuum daemon would do meanwhile.
  await sql`alter table passport set (autovacuum_enabled = false)`.execute(db);
  await sql`alter table gtin_claim set (autovacuum_enabled = false)`.execute(db);
  // 40 000 passports: half of them in the large organization's live mode, the rest spread over the others.
  await sql`
    insert into passport (organization_id, livemode, id, category, status, gtin, external_id, data, updated_at)
    select o.org, o.live, 'pp_' || lpad(to_hex(g), 10, '0') || substr(o.org, 5) || o.live::int,
           (array['textile', 'battery', 'general'])[1 + g % 3],
           (array['draft', 'draft', 'published', 'trashed', 'deactivated'])[1 + g % 5],
           case when g % 2 = 0 then lpad((g * 7 + o.n)::text, 14, '0') end,
           case when g % 3 = 0 then 'ext-' || g end,
           jsonb_build_object('product_name', 'Product ' || g),
           now() - make_interval(mins => g)
    from (select org, live, n, case when org = ${big.organizationId} and live then 20000 else 2000 end as rows
          from unnest(${ORGS}::text[]) with ordinality as u(org, n), (values (true), (false)) as m(live)
          where not (org = 'org_f' and live)) as o,
         generate_series(1, o.rows) as g`.execute(db);
  await sql`
    insert into gtin_claim (organization_id, livemode, gtin, passport_id, role, owner_id)
    select organization_id, livemode, gtin, id, 'lead', id from passport where gtin is not null`.execute(db);
});

afterAll(async () => {
  await db?.destroy();
  await database?.drop();
});

/** The plan of every query `run` makes through the store. */
async function plansOf(run: () => Promise<unknown>): Promise<PlanNode[]> {
  compiled.length = 0;
  await run();
  const queries = [...compiled];
  const plans: PlanNode[] = [];
  for (const q of queries) {
    const { rows } = await db.executeQuery<{ "QUERY PLAN": [{ Plan: PlanNode }] }>({
      ...q,
      sql: `explain (format json) ${q.sql}`,
    });
    plans.push(rows[0]!["QUERY PLAN"][0].Plan);
  }
  expect(plans.length).toBeGreaterThan(0);
  return plans;
}

/** The scans of the passport table (and of gtin_claim) in a plan, as "<node> <index>". */
function scans(plan: PlanNode, table = "passport"): string[] {
  return nodes(plan)
    .filter((n) => n["Relation Name"] === table)
    .map((n) => `${n["Node Type"]} ${n["Index Name"] ?? ""}`.trim());
}

const sorts = (plan: PlanNode) => nodes(plan).filter((n) => n["Node Type"].includes("Sort"));

const idOf = async (t: { organizationId: string; livemode: boolean }, offset: number) => {
  const { rows } = await sql<{ id: string }>`select id from passport
    where organization_id = ${t.organizationId} and livemode = ${t.livemode}
    order by id desc offset ${offset} limit 1`.execute(db);
  return rows[0]!.id;
};

describe.each([
  ["never analyzed", false],
  ["analyzed", true],
])("query plans on a passport table %s", (_label, analyzed) => {
  beforeAll(async () => {
    if (analyzed) await sql`analyze passport, gtin_claim`.execute(db);
    const { rows } = await sql<{ n: number }>`select count(*)::int as n from pg_stats
      where schemaname = ${PASSPORT_SCHEMA} and tablename = 'passport'`.execute(db);
    if (analyzed) expect(rows[0]!.n).toBeGreaterThan(0);
    else expect(rows[0]!.n).toBe(0);
  });

  for (const t of [big, { organizationId: "org_c", livemode: false }]) {
    const tenant = `${t.organizationId}/${t.livemode ? "live" : "test"}`;

    it(`reads one passport by id through the primary key (${tenant})`, async () => {
      const id = await idOf(t, 500);
      const [plan] = await plansOf(() => store.get(t, id));
      expect(scans(plan!)).toEqual(["Index Scan passport_pk"]);
    });

    it(`finds a passport by external_id through its unique index (${tenant})`, async () => {
      const [plan] = await plansOf(() => store.idByExternalId(t, "ext-300"));
      expect(scans(plan!)).toEqual([expect.stringMatching(/^Index (Only )?Scan passport_external_id_uq$/)]);
    });

    it(`finds who holds a GTIN through the claims' primary key, and the holder by its id (${tenant})`, async () => {
      const [plan] = await plansOf(() => store.claimHolders(t, ["00000000000140", "00000000000154"]));
      expect(scans(plan!, "gtin_claim")).toEqual(["Index Scan gtin_claim_pk"]);
      expect(scans(plan!)).toEqual(["Index Scan passport_pk"]);
    });

    it(`lists the newest passports in the primary key's order, first page and next (${tenant})`, async () => {
      const after = await idOf(t, 250);
      for (const afterId of [undefined, after]) {
        const [plan] = await plansOf(() => store.list(t, {}, 101, afterId));
        expect(scans(plan!)).toEqual(["Index Scan passport_pk"]);
        expect(nodes(plan!).find((n) => n["Index Name"] === "passport_pk")?.["Scan Direction"]).toBe(
          "Backward",
        );
        expect(sorts(plan!)).toEqual([]);
      }
    });

    it(`lists by status in id order through the status index, first page and next (${tenant})`, async () => {
      const after = await idOf(t, 250);
      for (const afterId of [undefined, after]) {
        const [plan] = await plansOf(() => store.list(t, { status: "published" }, 101, afterId));
        expect(scans(plan!)).toEqual(["Index Scan passport_status_id_idx"]);
        expect(sorts(plan!)).toEqual([]);
      }
    });

    it(`lists by category, and changed since an instant, through an index (${tenant})`, async () => {
      const since = new Date(Date.now() - 30 * 60_000);
      for (const filters of [
        { category: "battery" },
        { updatedSince: since },
        { category: "textile", updatedSince: since },
      ]) {
        const plans = await plansOf(() => store.list(t, filters, 101, undefined));
        for (const plan of plans) {
          expect(scans(plan)).toEqual([expect.stringMatching(/^(Index Scan|Bitmap Heap Scan)/)]);
          expect(nodes(plan).some((n) => n["Node Type"] === "Seq Scan")).toBe(false);
        }
      }
    });

    it(`reads the states of a claim's passports through the primary key (${tenant})`, async () => {
      const ids = [await idOf(t, 1), await idOf(t, 2), "pp_missing"];
      const [plan] = await plansOf(() => store.passportStates(t, ids));
      expect(scans(plan!)).toEqual([expect.stringMatching(/^(Index|Bitmap Heap) Scan( passport_pk)?$/)]);
      expect(JSON.stringify(plan)).toContain("passport_pk");
    });
  }

  it("reads a public passport by id alone through the public surface's hash index", async () => {
    const { rows } = await sql<{ id: string }>`select id from passport
      where livemode and status = 'published' order by id limit 1 offset 100`.execute(db);
    const [plan] = await plansOf(() => store.findPublicById(rows[0]!.id));
    expect(scans(plan!)).toEqual([
      expect.stringMatching(/^(Bitmap Heap|Index) Scan( passport_public_id_idx)?$/),
    ]);
    expect(JSON.stringify(plan)).toContain("passport_public_id_idx");
    expect(await store.findPublicById(rows[0]!.id)).toMatchObject({ id: rows[0]!.id, status: "published" });
  });
});
