/** statement.ts against the real Postgres: a query compiled once answers as the built query does, each run. */
import { sql, type Kysely } from "kysely";
import { createDb } from "../../src/db";
import { statement } from "../../src/statement";
import { createTestDatabase, type TestDatabase } from "../../src/testing";

interface DB {
  item: { organization_id: string; livemode: boolean; id: string; name: string | null; n: number };
}

let tdb: TestDatabase;
let db: Kysely<DB>;

beforeAll(async () => {
  tdb = await createTestDatabase("kit-statement");
  db = createDb<DB>({ url: tdb.url, schema: "public", applicationName: "kit-statement-test", max: 2 });
  await sql`create table item (organization_id text not null, livemode boolean not null, id text not null,
    name text, n int not null, primary key (organization_id, livemode, id))`.execute(db);
  await sql`insert into item values
    ('org_a', false, 'i1', 'one', 1), ('org_a', false, 'i2', 'two', 2), ('org_a', true, 'i1', 'live one', 3),
    ('org_b', false, 'i1', 'other org', 4), ('org_a', false, 'i3', null, 5)`.execute(db);
});

afterAll(async () => {
  await db.destroy();
  await tdb.drop();
});

describe("statement", () => {
  let builds = 0;
  const byId = statement((q: Kysely<DB>, p: { org: string; livemode: boolean; id: string }) => {
    builds++;
    return q
      .selectFrom("item")
      .selectAll()
      .where("organization_id", "=", p.org)
      .where("livemode", "=", p.livemode)
      .where("id", "=", p.id);
  });
  const built = (org: string, livemode: boolean, id: string) =>
    db
      .selectFrom("item")
      .selectAll()
      .where("organization_id", "=", org)
      .where("livemode", "=", livemode)
      .where("id", "=", id)
      .executeTakeFirst();

  it("answers each run with its own values, as the built query does, and is built once", async () => {
    const cases: [string, boolean, string][] = [
      ["org_a", false, "i1"],
      ["org_a", true, "i1"],
      ["org_b", false, "i1"],
      ["org_a", false, "i2"],
      ["org_b", true, "i2"],
    ];
    for (const [org, livemode, id] of cases) {
      expect(await byId.takeFirst(db, { org, livemode, id })).toEqual(await built(org, livemode, id));
    }
    expect(await byId.takeFirst(db, { org: "org_a", livemode: true, id: "i1" })).toMatchObject({
      name: "live one",
    });
    expect(await byId.takeFirst(db, { org: "org_b", livemode: true, id: "i2" })).toBeUndefined();
    expect(builds).toBe(1);
    expect(byId.sql(db)).toBe(
      'select * from "item" where "organization_id" = $1 and "livemode" = $2 and "id" = $3',
    );
  });

  it("keeps the builder's own constants and puts a value used twice in both places", async () => {
    const page = statement((q: Kysely<DB>, p: { org: string; min: number }) =>
      q
        .selectFrom("item")
        .select(["id", "n"])
        .where("organization_id", "=", p.org)
        .where("livemode", "=", false)
        .where((eb) => eb.or([eb("n", ">=", p.min), eb("n", "=", sql<number>`${p.min} - 1`)]))
        .orderBy("n")
        .limit(2),
    );
    expect(await page.execute(db, { org: "org_a", min: 2 })).toEqual([
      { id: "i1", n: 1 },
      { id: "i2", n: 2 },
    ]);
    expect(await page.execute(db, { org: "org_a", min: 5 })).toEqual([{ id: "i3", n: 5 }]);
    expect(await page.execute(db, { org: "org_b", min: 0 })).toEqual([{ id: "i1", n: 4 }]);
  });

  it("runs inside a transaction on its connection: it sees the transaction's own writes", async () => {
    await db
      .transaction()
      .execute(async (trx) => {
        await sql`insert into item values ('org_a', false, 'i9', 'uncommitted', 9)`.execute(trx);
        expect(await byId.takeFirst(trx, { org: "org_a", livemode: false, id: "i9" })).toMatchObject({
          name: "uncommitted",
        });
        expect(await byId.takeFirst(db, { org: "org_a", livemode: false, id: "i9" })).toBeUndefined();
        throw new Error("roll back");
      })
      .catch((err: Error) => expect(err.message).toBe("roll back"));
    expect(await byId.takeFirst(db, { org: "org_a", livemode: false, id: "i9" })).toBeUndefined();
  });

  it("refuses a builder that reads a value to decide the statement's shape, on its first run", async () => {
    const shaped = statement((q: Kysely<DB>, p: { org: string; limit: number }) =>
      q
        .selectFrom("item")
        .selectAll()
        .where("organization_id", "=", p.org)
        .limit(p.limit > 10 ? 10 : p.limit),
    );
    await expect(shaped.execute(db, { org: "org_a", limit: 5 })).rejects.toThrow(
      /the value "limit" was read while the statement was built/,
    );
  });
});
