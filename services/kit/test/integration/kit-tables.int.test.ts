/**
 * The kit's tables are the template's: `migrate` (migrateService) creates the outbox and the idempotency tables
 * of a service that declares `outbox` and `idempotency`, before the service's own migrations, and leaves them as
 * they are in a database where the service's migrations made them, as services did before.
 */
import { randomBytes } from "node:crypto";
import { sql, type Kysely, type Migration } from "kysely";
import { createDb, migrateDatabase, migrateKitPart } from "../../src/db";
import { createIdempotencyTable, idempotencyMigrations } from "../../src/idempotency";
import { createOutboxTable, outboxMigrations } from "../../src/outbox";
import { defineService, migrateService } from "../../src/service";
import { createTestDatabase, type TestDatabase } from "../../src/testing";

let tdb: TestDatabase;
let db: Kysely<any>;

beforeAll(async () => {
  tdb = await createTestDatabase("kit_tables");
  db = createDb<any>({ url: tdb.url, schema: "public", applicationName: "kit-tables-test", max: 2 });
});

afterAll(async () => {
  await db?.destroy();
  await tdb?.drop();
});

const newSchema = (label: string) => `${label}_${randomBytes(3).toString("hex")}`;

const ITEM: Migration = {
  async up(m) {
    await sql`create table item (name text primary key)`.execute(m);
  },
};

const definition = (schema: string, migrations: Record<string, Migration>) =>
  defineService({
    name: schema,
    schema,
    migrations,
    env: {},
    outbox: true,
    idempotency: true,
    start: () => undefined,
  });

const migrate = (schema: string, migrations: Record<string, Migration>) =>
  migrateService(definition(schema, migrations), { DATABASE_URL: tdb.url });

async function tables(schema: string): Promise<string[]> {
  const { rows } = await sql<{ name: string }>`
    select tablename as name from pg_tables where schemaname = ${schema} order by tablename`.execute(db);
  return rows.map((r) => r.name);
}

async function applied(schema: string, table: string): Promise<string[]> {
  const { rows } = await sql<{ name: string }>`
    select name from ${sql.table(`${schema}.${table}`)} order by name`.execute(db);
  return rows.map((r) => r.name);
}

async function functions(schema: string): Promise<string[]> {
  const { rows } = await sql<{ name: string }>`
    select p.proname as name from pg_proc p join pg_namespace n on n.oid = p.pronamespace
    where n.nspname = ${schema} order by p.proname`.execute(db);
  return rows.map((r) => r.name);
}

async function triggers(schema: string): Promise<string[]> {
  const { rows } = await sql<{ name: string }>`
    select t.tgname as name from pg_trigger t join pg_class c on c.oid = t.tgrelid
    join pg_namespace n on n.oid = c.relnamespace
    where n.nspname = ${schema} and not t.tgisinternal order by t.tgname`.execute(db);
  return rows.map((r) => r.name);
}

const KIT_TABLES = ["idempotency", "idempotency_effect", "outbox", "outbox_stage"];
const KIT_TRIGGERS = ["outbox_commit_order", "outbox_stage_commit"];
const KIT_FUNCTIONS = [
  "kit_idempotency_claim",
  "kit_idempotency_open",
  "kit_idempotency_record",
  "outbox_commit_order",
  "outbox_settled",
  "outbox_stage_commit",
];
const sorted = (names: readonly string[]) => [...names].sort();

describe("migrateService", () => {
  it("creates the outbox and the idempotency tables of a service whose migrations create neither, before them", async () => {
    const schema = newSchema("kt_new");
    // The service's own migration uses the kit's tables: they exist before it runs.
    const migrations: Record<string, Migration> = {
      "0001_init": ITEM,
      "0002_uses_kit_tables": {
        async up(m) {
          await sql`create view unsent as select event_id from outbox where sent_at is null`.execute(m);
          await sql`create view keys as select idempotency_key from idempotency`.execute(m);
        },
      },
    };
    await migrate(schema, migrations);
    expect(await tables(schema)).toEqual(
      expect.arrayContaining([...KIT_TABLES, "item", "kit_outbox_migration", "kit_idempotency_migration"]),
    );
    expect(await functions(schema)).toEqual(KIT_FUNCTIONS);
    expect(await triggers(schema)).toEqual(KIT_TRIGGERS);
    expect(await applied(schema, "kit_outbox_migration")).toEqual(sorted(Object.keys(outboxMigrations)));
    expect(await applied(schema, "kit_idempotency_migration")).toEqual(
      sorted(Object.keys(idempotencyMigrations)),
    );

    // A second run changes nothing.
    await migrate(schema, migrations);
    expect(await triggers(schema)).toEqual(KIT_TRIGGERS);
  });

  it("keeps the tables, their rows and the migration history of a database whose service migration made them", async () => {
    const schema = newSchema("kt_old");
    // As deployed before: the service's first migration made the tables, and the kit's changes came after it.
    const before: Record<string, Migration> = {
      "0001_init": {
        async up(m) {
          await ITEM.up(m);
          await createOutboxTable(m);
          await createIdempotencyTable(m);
          // The kit made no effect table then.
          await sql`drop table idempotency_effect`.execute(m);
        },
      },
    };
    await migrateDatabase(tdb.url, schema, before);
    const without = (all: Record<string, Migration>, ...names: string[]) =>
      Object.fromEntries(Object.entries(all).filter(([name]) => !names.includes(name)));
    await migrateKitPart(tdb.url, schema, "kit_outbox_migration", without(outboxMigrations, "0000_table"));
    await migrateKitPart(
      tdb.url,
      schema,
      "kit_idempotency_migration",
      without(idempotencyMigrations, "0000_tables", "0004_effects"),
    );
    await sql`insert into ${sql.table(`${schema}.outbox`)} (event_id, organization_id, livemode, type, payload)
      values ('ev_kept', 'org_a', false, 'passport.created', '{}')`.execute(db);
    await sql`insert into ${sql.table(`${schema}.idempotency`)} (organization_id, livemode, caller_organization_id,
        idempotency_key, fingerprint, method, request_id, response)
      values ('org_a', false, 'org_a', 'k-kept', 'f', '/m', 'req_kept', '\\x00')`.execute(db);
    expect(await tables(schema)).not.toContain("idempotency_effect");

    // The service's migration now creates nothing (its name kept), and the template makes the kit's tables.
    await migrate(schema, { "0001_init": ITEM });
    expect(await tables(schema)).toEqual(expect.arrayContaining(KIT_TABLES));
    expect(await applied(schema, "kit_outbox_migration")).toEqual(sorted(Object.keys(outboxMigrations)));
    expect(await applied(schema, "kit_idempotency_migration")).toEqual(
      sorted(Object.keys(idempotencyMigrations)),
    );
    expect(await applied(schema, "kysely_migration")).toEqual(["0001_init"]);
    expect(await triggers(schema)).toEqual(KIT_TRIGGERS);
    const kept = await sql<{ n: number }>`
      select (select count(*) from ${sql.table(`${schema}.outbox`)} where event_id = 'ev_kept')::int
        + (select count(*) from ${sql.table(`${schema}.idempotency`)} where idempotency_key = 'k-kept')::int as n`.execute(
      db,
    );
    expect(kept.rows[0]!.n).toBe(2);
  });

  it("migrates a new database whose service migration still creates the tables itself, as services did before", async () => {
    const schema = newSchema("kt_template");
    await migrate(schema, {
      "0001_init": {
        async up(m) {
          await ITEM.up(m);
          await createOutboxTable(m);
          await createIdempotencyTable(m);
        },
      },
    });
    expect(await tables(schema)).toEqual(expect.arrayContaining(KIT_TABLES));
    expect(await triggers(schema)).toEqual(KIT_TRIGGERS);
    expect(await functions(schema)).toEqual(KIT_FUNCTIONS);
  });

  it("creates no kit table for a service that declares neither", async () => {
    const schema = newSchema("kt_none");
    await migrateService(
      defineService({
        name: schema,
        schema,
        migrations: { "0001_init": ITEM },
        env: {},
        start: () => undefined,
      }),
      { DATABASE_URL: tdb.url },
    );
    expect(await tables(schema)).toEqual(["item", "kysely_migration", "kysely_migration_lock"]);
  });
});
