/**
 * Migration 0005 on a passport schema that already holds passports: the usage rows start from the passports'
 * statuses, and the trigger keeps them from then on (the service's own tests, lifecycle.int.test.ts, cover the
 * transitions through the API).
 */
import { sql, type Kysely } from "kysely";
import { createDb, migrateSchema } from "@dpp/kit/internal";
import { createTestDatabase, type TestDatabase } from "@dpp/kit/testing";
import { migrations } from "../../migrations";

const SCHEMA = "passport";
let database: TestDatabase;
let db: Kysely<any>;

beforeAll(async () => {
  database = await createTestDatabase("passport_slots");
  db = createDb<any>({ url: database.url, schema: SCHEMA, applicationName: "slots", max: 1 });
});
afterAll(async () => {
  await db?.destroy();
  await database?.drop();
});

const usage = async () =>
  (
    await sql<{ organization_id: string; livemode: boolean; used: number }>`
      select organization_id, livemode, used from publish_slot_usage order by organization_id, livemode`.execute(
      db,
    )
  ).rows;

it("counts the passports already published when it runs, then follows every status change", async () => {
  const before = Object.fromEntries(Object.entries(migrations).filter(([name]) => name < "0005"));
  await migrateSchema(db, SCHEMA, before);
  // org_a: 2 published, 1 deactivated, 1 readonly, 2 drafts in test mode; 1 published live. org_b: drafts only.
  const rows: Array<[string, boolean, string]> = [
    ["org_a", false, "published"],
    ["org_a", false, "published"],
    ["org_a", false, "deactivated"],
    ["org_a", false, "readonly"],
    ["org_a", false, "draft"],
    ["org_a", false, "trashed"],
    ["org_a", true, "published"],
    ["org_b", false, "draft"],
  ];
  for (const [i, [org, live, status]] of rows.entries())
    await sql`insert into passport (organization_id, livemode, id, category, status, data)
      values (${org}, ${live}, ${`pp_${i}`}, 'textile', ${status}, '{}')`.execute(db);

  expect((await migrateSchema(db, SCHEMA, migrations))[0]).toEqual("0005_publish_slot_usage");
  expect(await usage()).toEqual([
    { organization_id: "org_a", livemode: false, used: 4 },
    { organization_id: "org_a", livemode: true, used: 1 },
  ]);

  await sql`update passport set status = 'published' where id = 'pp_7'`.execute(db);
  await sql`update passport set status = 'draft' where id = 'pp_0'`.execute(db);
  await sql`update passport set status = 'published' where id = 'pp_2'`.execute(db);
  await sql`delete from passport where id = 'pp_6'`.execute(db);
  await sql`insert into passport (organization_id, livemode, id, category, status, data)
    values ('org_b', true, 'pp_new', 'textile', 'readonly', '{}')`.execute(db);
  expect(await usage()).toEqual([
    { organization_id: "org_a", livemode: false, used: 3 },
    { organization_id: "org_a", livemode: true, used: 0 },
    { organization_id: "org_b", livemode: false, used: 1 },
    { organization_id: "org_b", livemode: true, used: 1 },
  ]);
});
