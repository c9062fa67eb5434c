/**
 * Plans a connection keeps do not depend on how large a table was when they were made. A service migrated on a
 * fresh database starts with empty tables; its connections prepare their statements (the kit's named statements,
 * the idempotency functions' PL/pgSQL statements) on the first requests and keep each generic plan for as long as
 * they live. Once the tables hold thousands of rows, and no ANALYZE has run since the migration (autovacuum off,
 * or not round yet), a lookup of one passport and the claim of an Idempotency-Key must still read one index entry,
 * not the whole table. Postgres' per-transaction counters (pg_stat_xact_user_tables) say which scans a statement
 * made.
 */
import { randomBytes } from "node:crypto";
import { sql, type Kysely } from "kysely";
import { createDb, migrateService } from "@dpp/kit/internal";
import { createTestDatabase, type TestDatabase } from "@dpp/kit/testing";
import { passportService, PASSPORT_SCHEMA } from "../../src/service";
import { PassportReads } from "../../src/store";
import type { PassportDB } from "../../src/store/schema";

let tdb: TestDatabase;
/** One connection: the statements prepared on the empty tables are the ones run once they are full. */
let db: Kysely<PassportDB>;

const tenant = { organizationId: "org_cached", livemode: false };
const CALLER = "org_cached";

/** The key's claim a keyed create sends with its first statement (kit idempotency.ts). */
const claim = (q: Kysely<PassportDB>, key: string) =>
  sql`select kit_idempotency_claim(${tenant.organizationId}, ${tenant.livemode}, ${CALLER}, ${key})`.execute(
    q,
  );

interface Scans {
  seq_scan: number;
  idx_scan: number;
}

/** The scans of `table` this connection counted and has not yet reported (they include the current transaction's). */
async function pendingScans(q: Kysely<PassportDB>, table: string): Promise<Scans> {
  const { rows } = await sql<Scans>`
    select seq_scan::int, idx_scan::int from pg_stat_xact_user_tables
    where schemaname = ${PASSPORT_SCHEMA} and relname = ${table}`.execute(q);
  return rows[0] ?? { seq_scan: 0, idx_scan: 0 };
}

/** The scans of `table` that `run` made, in one transaction. */
async function scansOf(table: string, run: (trx: Kysely<PassportDB>) => Promise<void>): Promise<Scans> {
  return db.transaction().execute(async (trx) => {
    const before = await pendingScans(trx, table);
    await run(trx);
    const after = await pendingScans(trx, table);
    return { seq_scan: after.seq_scan - before.seq_scan, idx_scan: after.idx_scan - before.idx_scan };
  });
}

beforeAll(async () => {
  tdb = await createTestDatabase("passport_cached_plans");
  await migrateService(passportService(), { DATABASE_URL: tdb.url });
  db = createDb<PassportDB>({
    url: tdb.url,
    schema: PASSPORT_SCHEMA,
    applicationName: "cached-plans",
    max: 1,
  });
  // Nothing analyzes the tables from here on, whatever the autovacuum daemon would do meanwhile.
  await sql`alter table passport set (autovacuum_enabled = false)`.execute(db);
  await sql`alter table idempotency set (autovacuum_enabled = false)`.execute(db);
  // The first requests of a new deployment, on empty tables: more runs than Postgres needs to settle on a plan
  // it keeps (five custom plans, then the generic one when it costs no more).
  const reads = new PassportReads(db);
  for (let i = 0; i < 8; i++) {
    expect(await reads.get(tenant, `pp_missing_${i}`)).toBeUndefined();
    await db.transaction().execute((trx) => claim(trx, `k-first-${i}`));
  }
  // Then the tables fill: 20,000 passports and as many idempotency records, no ANALYZE.
  await sql`
    insert into passport (organization_id, livemode, id, category, status, data)
    select ${tenant.organizationId}, ${tenant.livemode}, 'pp_cached_' || lpad(g::text, 6, '0'), 'textile', 'draft',
           jsonb_build_object('product_name', 'Product ' || g, 'product_description', repeat('x', 400))
    from generate_series(1, 20000) g`.execute(db);
  await sql`
    insert into idempotency (organization_id, livemode, caller_organization_id, idempotency_key, fingerprint, method,
                             request_id, response)
    select ${tenant.organizationId}, ${tenant.livemode}, ${CALLER}, 'k-' || g, md5(g::text),
           '/dpp.passport.v1.PassportService/CreatePassport', 'req_' || g, ${randomBytes(600)}
    from generate_series(1, 20000) g`.execute(db);
  const { rows } = await sql<{ relname: string; reltuples: number }>`
    select c.relname, c.reltuples::float8 as reltuples from pg_class c
    where c.relnamespace = ${PASSPORT_SCHEMA}::regnamespace and c.relname in ('passport', 'idempotency')
    order by c.relname`.execute(db);
  // Neither was analyzed after it filled (-1: never analyzed; 0: analyzed while empty).
  expect(rows.map((r) => r.reltuples <= 0)).toEqual([true, true]);
}, 60_000);

afterAll(async () => {
  await db?.destroy();
  await tdb?.drop();
});

describe("plans made on the empty tables of a new deployment, once the tables hold 20,000 rows", () => {
  it("a passport read by id reads the primary key, not the table", async () => {
    const scans = await scansOf("passport", async (trx) => {
      const row = await new PassportReads(trx).get(tenant, "pp_cached_012345");
      expect(row?.id).toBe("pp_cached_012345");
    });
    expect(scans).toEqual({ seq_scan: 0, idx_scan: 1 });
  });

  it("the claim of an Idempotency-Key reads the records' primary key, not the table", async () => {
    expect(await scansOf("idempotency", (trx) => claim(trx, "k-new").then(() => undefined))).toEqual({
      seq_scan: 0,
      idx_scan: 1,
    });
    // A recorded key is found the same way (the claim fails: the call then answers the record).
    await expect(db.transaction().execute((trx) => claim(trx, "k-777"))).rejects.toMatchObject({
      code: "KI001",
    });
  });
});
