/** db.ts against the real Postgres: schema-scoped migrations and error helpers. */
import pg from "pg";
import { sql, type Kysely, type Migration } from "kysely";
import {
  analyzeSchema,
  createDb,
  executeStatement,
  isUniqueViolation,
  PREPARED_LIST_MAX,
  migrateSchema,
  withConnection,
} from "../../src/db";
import { BUS_SCHEMA, migrateBus } from "@dpp/bus";
import { createTestDatabase, type TestDatabase } from "../../src/testing";

let tdb: TestDatabase;
let admin: pg.Client;
const dbs: Kysely<any>[] = [];

function open(schema: string, max = 2, preparedStatements?: number): Kysely<any> {
  const db = createDb<any>({ url: tdb.url, schema, applicationName: "kit-db-test", max, preparedStatements });
  dbs.push(db);
  return db;
}

async function tablesIn(schema: string): Promise<string[]> {
  const { rows } = await admin.query<{ table_name: string }>(
    "select table_name from information_schema.tables where table_schema = $1 order by table_name",
    [schema],
  );
  return rows.map((r) => r.table_name);
}

const migrations: Record<string, Migration> = {
  "0001_widget": {
    async up(db) {
      await db.schema
        .createTable("widget")
        .addColumn("id", "bigserial", (c) => c.primaryKey())
        .addColumn("name", "text", (c) => c.notNull())
        .addUniqueConstraint("widget_name_uq", ["name"])
        .execute();
    },
  },
  "0002_widget_log": {
    async up(db) {
      await db.schema.createTable("widget_log").addColumn("note", "text").execute();
      // A migration that must run exactly once: it leaves one row per run.
      await sql`insert into widget_log (note) values ('ran')`.execute(db);
    },
  },
};

beforeAll(async () => {
  tdb = await createTestDatabase("kitdb");
  admin = new pg.Client({ connectionString: tdb.url });
  await admin.connect();
});

afterAll(async () => {
  await Promise.all(dbs.map((d) => d.destroy()));
  await admin?.end();
  await tdb?.drop();
});

describe("migrateSchema", () => {
  it("creates the schema, runs the migrations in it with the migration tables inside it, and is idempotent", async () => {
    const db = open("svc_a");
    expect(await migrateSchema(db, "svc_a", migrations)).toEqual(["0001_widget", "0002_widget_log"]);
    expect(await tablesIn("svc_a")).toEqual([
      "kysely_migration",
      "kysely_migration_lock",
      "widget",
      "widget_log",
    ]);
    expect(await tablesIn("public")).toEqual([]);

    expect(await migrateSchema(db, "svc_a", migrations)).toEqual([]);
    const { rows } = await admin.query("select count(*)::int as n from svc_a.widget_log");
    expect(rows[0].n).toBe(1);
    const applied = await admin.query("select name from svc_a.kysely_migration order by name");
    expect(applied.rows.map((r) => r.name)).toEqual(["0001_widget", "0002_widget_log"]);
  });

  it("runs only the new migrations when more are added", async () => {
    const db = open("svc_b");
    await migrateSchema(db, "svc_b", { "0001_widget": migrations["0001_widget"]! });
    expect(await tablesIn("svc_b")).not.toContain("widget_log");
    expect(await migrateSchema(db, "svc_b", migrations)).toEqual(["0002_widget_log"]);
    expect(await tablesIn("svc_b")).toContain("widget_log");
  });

  it("keeps two services' schemas apart (same table names, own migration history)", async () => {
    const a = open("svc_c1");
    const b = open("svc_c2");
    await migrateSchema(a, "svc_c1", migrations);
    await migrateSchema(b, "svc_c2", { "0001_widget": migrations["0001_widget"]! });
    await a.insertInto("widget").values({ name: "only-in-c1" }).execute();
    expect(await b.selectFrom("widget").selectAll().execute()).toEqual([]);
    expect(await tablesIn("svc_c2")).toEqual(["kysely_migration", "kysely_migration_lock", "widget"]);
  });

  it("survives several processes migrating the same fresh schema at once", async () => {
    const runs = await Promise.allSettled(
      [1, 2, 3, 4].map(() => migrateSchema(open("svc_race", 1), "svc_race", migrations)),
    );
    expect(runs.map((r) => (r.status === "rejected" ? String(r.reason) : "ok"))).toEqual([
      "ok",
      "ok",
      "ok",
      "ok",
    ]);
    const applied = runs.flatMap((r) => (r.status === "fulfilled" ? r.value : []));
    expect(applied.sort()).toEqual(["0001_widget", "0002_widget_log"]);
    const { rows } = await admin.query("select count(*)::int as n from svc_race.widget_log");
    expect(rows[0].n).toBe(1);
  });

  it("throws when a migration fails, and applies nothing of it", async () => {
    const db = open("svc_bad");
    const bad: Record<string, Migration> = {
      "0001_bad": {
        async up(d) {
          await d.schema.createTable("half").addColumn("id", "integer").execute();
          await sql`select * from no_such_table`.execute(d);
        },
      },
    };
    await expect(migrateSchema(db, "svc_bad", bad)).rejects.toThrow(/no_such_table/);
    expect(await tablesIn("svc_bad")).not.toContain("half");
  });
});

describe("analyzeSchema", () => {
  it("analyzes the tables that hold rows and leaves empty ones never analyzed", async () => {
    const db = open("svc_analyze");
    await migrateSchema(db, "svc_analyze", migrations);
    // widget is empty; widget_log holds the migration's row.
    expect(await analyzeSchema(tdb.url, "svc_analyze")).toEqual([
      "kysely_migration",
      "kysely_migration_lock",
      "widget_log",
    ]);
    const { rows } = await admin.query<{ relname: string; reltuples: number }>(
      `select relname, reltuples::float8 as reltuples from pg_class
       where relnamespace = 'svc_analyze'::regnamespace and relname in ('widget', 'widget_log') order by relname`,
    );
    // -1: never analyzed, so the planner takes the empty table for ten pages rather than for none.
    expect(rows).toEqual([
      { relname: "widget", reltuples: -1 },
      { relname: "widget_log", reltuples: 1 },
    ]);
  });
});

describe("migrateBus", () => {
  it("is idempotent, also when several services migrate it at once", async () => {
    const runs = await Promise.allSettled([migrateBus(tdb.url), migrateBus(tdb.url), migrateBus(tdb.url)]);
    expect(runs.map((r) => (r.status === "rejected" ? String(r.reason) : "ok"))).toEqual(["ok", "ok", "ok"]);
    await migrateBus(tdb.url);
    expect(await tablesIn(BUS_SCHEMA)).toEqual([
      "consumer_offset",
      "kysely_migration",
      "kysely_migration_lock",
      "message",
    ]);
    const { rows } = await admin.query("select count(*)::int as n from bus.kysely_migration");
    expect(rows[0].n).toBe(1);
  });
});

describe("createDb", () => {
  it("resolves unqualified names in the service schema and reads int8 as numbers", async () => {
    const db = open("svc_a");
    await db.insertInto("widget").values({ name: "w1" }).execute();
    const row = await db
      .selectFrom("widget")
      .select(["id", "name"])
      .where("name", "=", "w1")
      .executeTakeFirstOrThrow();
    expect(typeof row.id).toBe("number");
    const count = await sql<{ n: unknown }>`select count(*) as n from widget`.execute(db);
    expect(typeof count.rows[0]!.n).toBe("number");
  });
});

describe("isUniqueViolation with a real Postgres error", () => {
  it("recognises a duplicate on the named constraint and nothing else", async () => {
    const db = open("svc_a");
    await db.insertInto("widget").values({ name: "dup" }).execute();
    let err: unknown;
    try {
      await db.insertInto("widget").values({ name: "dup" }).execute();
    } catch (e) {
      err = e;
    }
    expect(isUniqueViolation(err)).toBe(true);
    expect(isUniqueViolation(err, "widget_name_uq")).toBe(true);
    expect(isUniqueViolation(err, "widget_pkey")).toBe(false);

    let notNull: unknown;
    try {
      await sql`insert into widget (name) values (null)`.execute(db);
    } catch (e) {
      notNull = e;
    }
    expect(notNull).toBeDefined();
    expect(isUniqueViolation(notNull)).toBe(false);
  });
});

describe("withConnection and executeStatement", () => {
  const awkward = [
    "it's",
    "back\\slash and \\x41",
    "new\nline; select 1; --",
    "$1 $$ /* */",
    "日本語 and 🙂",
    "",
  ];

  it("writes values into an EXECUTE that Postgres reads back as given, in one message of several statements", async () => {
    const db = open("svc_a");
    const bytes = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
    const values = [
      ...awkward,
      bytes,
      true,
      false,
      -5,
      null,
      new Date("2026-01-02T03:04:05.678Z"),
      { k: ["v"] },
    ];
    const results = await withConnection(db, async (_conn, client) => {
      await client.query(`prepare awkward(text, text, text, text, text, text, bytea, boolean, boolean, int, text,
        timestamptz, jsonb) as select $1 as a0, $2 as a1, $3 as a2, $4 as a3, $5 as a4, $6 as a5, $7 as b, $8 as t,
        $9 as f, $10 - 2 as n, $11 as z, $12 as at, $13 as doc`);
      try {
        const res = await client.query(`begin;\n${executeStatement("awkward", values)!};\ncommit`);
        return res as unknown as pg.QueryResult[];
      } finally {
        await client.query("deallocate awkward");
      }
    });
    expect(results.map((r) => r.command)).toEqual(["BEGIN", "SELECT", "COMMIT"]);
    expect(results[1]!.rows[0]).toEqual({
      a0: awkward[0],
      a1: awkward[1],
      a2: awkward[2],
      a3: awkward[3],
      a4: awkward[4],
      a5: awkward[5],
      b: bytes,
      t: true,
      f: false,
      n: -7,
      z: null,
      at: new Date("2026-01-02T03:04:05.678Z"),
      doc: { k: ["v"] },
    });
  });

  it("gives no text for a value that holds a NUL, which no text column can hold", () => {
    expect(executeStatement("s", ["a\0b"])).toBeUndefined();
    expect(executeStatement("s", ["ab", null])).toBe("execute s('ab', null)");
  });

  it("runs Kysely's queries and the client's on the same connection, and gives it back to the pool", async () => {
    const db = open("svc_a", 1);
    const pids = await withConnection(db, async (conn, client) => {
      const viaKysely = await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(conn);
      const viaClient = await client.query<{ pid: number }>("select pg_backend_pid() as pid");
      return [viaKysely.rows[0]!.pid, viaClient.rows[0]!.pid];
    });
    expect(pids[0]).toBe(pids[1]);
    // A pool of one: the connection was given back, or this would wait for ever.
    const after = await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(db);
    expect(after.rows[0]!.pid).toBe(pids[0]);
  });
});

describe("prepared statements", () => {
  /** The connection's prepared statements: name, text, and how often a generic plan ran (Postgres 14+). */
  async function prepared(db: Kysely<any>) {
    const { rows } = await sql<{ name: string; statement: string; generic_plans: number }>`
      select name, statement, generic_plans from pg_prepared_statements order by name`.execute(db);
    return rows;
  }

  it("prepares a query with values once per connection, and runs it on a generic plan after a few runs", async () => {
    const db = open("svc_a", 1);
    await db.insertInto("widget").values({ name: "prep-1" }).execute();
    const byName = (name: string) =>
      db.selectFrom("widget").select(["id", "name"]).where("name", "=", name).executeTakeFirst();
    for (let i = 0; i < 8; i++) expect((await byName("prep-1"))?.name).toBe("prep-1");
    expect(await byName("absent")).toBeUndefined();
    const statements = (await prepared(db)).filter((s) => s.statement.includes(`"widget"`));
    expect(statements).toHaveLength(2); // the insert and the select, each once
    const select = statements.find((s) => s.statement.startsWith("select"))!;
    expect(select.generic_plans).toBeGreaterThan(0);
  });

  it("runs a query without values unnamed, and texts beyond the pool's bound unnamed", async () => {
    const db = open("svc_a", 1, 1);
    await sql`select 1 as one`.execute(db);
    await sql`select ${1}::int as one`.execute(db);
    await sql`select ${2}::int as two`.execute(db);
    expect((await sql<{ two: number }>`select ${2}::int as two`.execute(db)).rows[0]!.two).toBe(2);
    expect((await prepared(db)).map((s) => s.statement)).toEqual(["select $1::int as one"]);
  });

  it("plans a run given a list longer than PREPARED_LIST_MAX for its values, off the generic plan", async () => {
    const db = open("svc_a", 1);
    await sql`create table if not exists pair (k text primary key, v text not null)`.execute(db);
    const keys = Array.from({ length: 1000 }, (_, i) => `k${i}`);
    await sql`insert into pair select k, 'v' || k from unnest(${keys}::text[]) as k on conflict do nothing`.execute(
      db,
    );
    const matching = (ks: string[]) =>
      sql<{
        k: string;
      }>`select p.k from pair p join unnest(${ks}::text[]) as r(k) on r.k = p.k order by p.k`.execute(db);
    const short = keys.slice(0, PREPARED_LIST_MAX);
    for (let i = 0; i < 8; i++) expect((await matching(short)).rows).toHaveLength(PREPARED_LIST_MAX);
    const join = async () =>
      (await prepared(db)).filter((s) => s.statement.includes("join unnest")).map((s) => s.generic_plans);
    const before = await join();
    expect(before).toHaveLength(1);
    expect(before[0]).toBeGreaterThan(0);
    // The long list: the right answer, from a plan of its own; the prepared statement's generic plan did not run.
    expect((await matching(keys)).rows.map((r) => r.k).sort()).toEqual([...keys].sort());
    expect(await join()).toEqual(before);
  });

  it("prepares none with a bound of 0", async () => {
    const db = open("svc_a", 1, 0);
    expect((await sql<{ one: number }>`select ${1}::int as one`.execute(db)).rows[0]!.one).toBe(1);
    expect(await prepared(db)).toEqual([]);
  });

  it("answers with the new columns when a migration changed the table under a prepared select *", async () => {
    const db = open("svc_a", 1);
    await sql`create table gadget (id int primary key, name text not null)`.execute(db);
    await sql`insert into gadget values (1, 'g')`.execute(db);
    const read = () => db.selectFrom("gadget").selectAll().where("id", "=", 1).executeTakeFirstOrThrow();
    for (let i = 0; i < 6; i++) expect(await read()).toEqual({ id: 1, name: "g" });
    // Another process (a rolling deploy's migration) adds a column.
    await admin.query("alter table svc_a.gadget add column colour text not null default 'red'");
    expect(await read()).toEqual({ id: 1, name: "g", colour: "red" });
    expect(await read()).toEqual({ id: 1, name: "g", colour: "red" });
  });
});
