/**
 * runIdempotent against the real Postgres, on a small schema of its own: the paths a service's tests cannot
 * provoke on purpose (a record committed between the key's read and the upsert; work that catches the failure
 * of one of its transactions and goes on; a refusal after a write, which runs the work a second time).
 */
import { randomBytes } from "node:crypto";
import { sql, type Kysely } from "kysely";
import { createDb, migrateSchema } from "../../src/db";
import { ApiError } from "@dpp/contract";
import { createIdempotencyTable, runIdempotent, singleStatement, transaction } from "../../src/idempotency";
import type { TenantContext } from "../../src/context";
import { createTestDatabase, type TestDatabase } from "../../src/testing";

let tdb: TestDatabase;
let db: Kysely<any>;
let other: Kysely<any>;

beforeAll(async () => {
  tdb = await createTestDatabase("kit_idem");
  db = createDb<any>({ url: tdb.url, schema: "idem", applicationName: "kit-idem-test", max: 2 });
  other = createDb<any>({ url: tdb.url, schema: "idem", applicationName: "kit-idem-other", max: 1 });
  await migrateSchema(db, "idem", {
    "0001": {
      async up(m) {
        await createIdempotencyTable(m);
        await m.schema
          .createTable("item")
          .addColumn("name", "text", (c) => c.primaryKey())
          .execute();
      },
    },
  });
});

afterAll(async () => {
  await db?.destroy();
  await other?.destroy();
  await tdb?.drop();
});

const METHOD = "/test.v1.Items/Create";
const encode = (s: string) => Buffer.from(s, "utf8");
const decode = (b: Uint8Array) => Buffer.from(b).toString("utf8");

function keyed(): TenantContext {
  return {
    requestId: `req_${randomBytes(4).toString("hex")}`,
    organizationId: `org_${randomBytes(4).toString("hex")}`,
    livemode: false,
    idempotency: {
      key: `k-${randomBytes(4).toString("hex")}`,
      fingerprint: randomBytes(32).toString("hex"),
      callerOrganizationId: "org_caller",
    },
  };
}

const call = (ctx: TenantContext, work: () => Promise<string>) =>
  runIdempotent({ db, ctx, method: METHOD, encode, decode }, work);

const insertItem = (name: string) =>
  transaction(db, (trx) => trx.insertInto("item").values({ name }).execute());
const insertItemAlone = (name: string) =>
  singleStatement(db, (q) => q.insertInto("item").values({ name }).execute());

async function items(prefix: string): Promise<string[]> {
  const rows = await db.selectFrom("item").select("name").where("name", "like", `${prefix}%`).execute();
  return rows.map((r: { name: string }) => r.name).sort();
}

describe("runIdempotent", () => {
  it("answers a record committed after its read of the key, and undoes its own work", async () => {
    const ctx = keyed();
    const i = ctx.idempotency!;
    const out = await call(ctx, async () => {
      await insertItem(`${ctx.requestId}-mine`);
      // The attempt that held the key's lock committed its answer just after this call read the key.
      await other
        .insertInto("idempotency")
        .values({
          organization_id: ctx.organizationId,
          livemode: ctx.livemode,
          caller_organization_id: i.callerOrganizationId,
          idempotency_key: i.key,
          fingerprint: i.fingerprint,
          method: METHOD,
          request_id: "req_first",
          response: encode("the first answer"),
          error: null,
        })
        .execute();
      return "the second answer";
    });
    expect(out).toEqual({ response: "the first answer", replayed: true });
    expect(await items(ctx.requestId)).toEqual([]);
  });

  it("undoes a single-statement write too when the record was committed after its read", async () => {
    const ctx = keyed();
    const i = ctx.idempotency!;
    const out = await call(ctx, async () => {
      await insertItemAlone(`${ctx.requestId}-mine`);
      await other
        .insertInto("idempotency")
        .values({
          organization_id: ctx.organizationId,
          livemode: ctx.livemode,
          caller_organization_id: i.callerOrganizationId,
          idempotency_key: i.key,
          fingerprint: i.fingerprint,
          method: METHOD,
          request_id: "req_first",
          response: encode("the first answer"),
          error: null,
        })
        .execute();
      return "the second answer";
    });
    expect(out).toEqual({ response: "the first answer", replayed: true });
    expect(await items(ctx.requestId)).toEqual([]);
  });

  it("commits a single-statement write with the record, and replays the answer without running again", async () => {
    const ctx = keyed();
    let runs = 0;
    const work = async () => {
      runs++;
      await insertItemAlone(`${ctx.requestId}-one`);
      return "written";
    };
    expect(await call(ctx, work)).toEqual({ response: "written", replayed: false });
    expect(await call(ctx, work)).toEqual({ response: "written", replayed: true });
    expect(runs).toBe(1);
    expect(await items(ctx.requestId)).toEqual([`${ctx.requestId}-one`]);
  });

  it("records a refusal made after a write without the write: the work runs again, its refusal rolled back alone", async () => {
    for (const write of [insertItem, insertItemAlone]) {
      const ctx = keyed();
      let runs = 0;
      const work = async (): Promise<string> => {
        runs++;
        await write(`${ctx.requestId}-${runs}`);
        throw new ApiError("validation_failed", "Refused after writing.", { run: runs });
      };
      const first = await call(ctx, work).catch((err: unknown) => err);
      expect(first).toBeInstanceOf(ApiError);
      // The first attempt (no savepoint) was rolled back as a whole; the second recorded its refusal.
      expect(runs).toBe(2);
      expect((first as ApiError).details).toEqual({ run: 2 });
      expect(await items(ctx.requestId)).toEqual([]);
      const again = await call(ctx, work).catch((err: unknown) => err);
      expect(runs).toBe(2);
      expect(again).toMatchObject({
        code: "validation_failed",
        details: { run: 2 },
        headers: { "Idempotent-Replayed": "true" },
      });
    }
  });

  it("records a refusal made before any write at once, the work run once", async () => {
    const ctx = keyed();
    let runs = 0;
    const work = async (): Promise<string> => {
      runs++;
      throw new ApiError("validation_failed", "Refused before writing.");
    };
    await expect(call(ctx, work)).rejects.toMatchObject({ code: "validation_failed" });
    await expect(call(ctx, work)).rejects.toMatchObject({
      code: "validation_failed",
      headers: { "Idempotent-Replayed": "true" },
    });
    expect(runs).toBe(1);
  });

  it("runs a single-statement write on the pool outside a call: committed when it returns", async () => {
    const name = `alone-${randomBytes(4).toString("hex")}`;
    await insertItemAlone(name);
    await expect(insertItemAlone(name)).rejects.toMatchObject({ code: "23505" });
    const rows = await other.selectFrom("item").select("name").where("name", "=", name).execute();
    expect(rows).toHaveLength(1);
  });

  it("replaces an expired record with the new result", async () => {
    const ctx = keyed();
    expect(await call(ctx, async () => "old")).toEqual({ response: "old", replayed: false });
    await sql`update idempotency set created_at = now() - interval '25 hours'
      where idempotency_key = ${ctx.idempotency!.key}`.execute(db);
    const again = { ...ctx, idempotency: { ...ctx.idempotency!, fingerprint: "f".repeat(64) } };
    expect(await call(again, async () => "new")).toEqual({ response: "new", replayed: false });
    expect(await call(again, async () => "never")).toEqual({ response: "new", replayed: true });
  });

  it("rolls back a first transaction that fails, alone, when the work catches its failure and goes on", async () => {
    const ctx = keyed();
    const out = await call(ctx, async () => {
      await transaction(db, async (trx) => {
        await trx
          .insertInto("item")
          .values({ name: `${ctx.requestId}-failed` })
          .execute();
        throw new Error("changed its mind");
      }).catch(() => undefined);
      await insertItem(`${ctx.requestId}-kept`);
      return "done";
    });
    expect(out).toEqual({ response: "done", replayed: false });
    expect(await items(ctx.requestId)).toEqual([`${ctx.requestId}-kept`]);
  });

  it("keeps what an earlier transaction wrote when a later one fails and the work goes on", async () => {
    const ctx = keyed();
    const out = await call(ctx, async () => {
      await insertItem(`${ctx.requestId}-a`);
      // A database error: the later transaction's savepoint is rolled back, the call's transaction goes on.
      await insertItem(`${ctx.requestId}-a`).catch(() => undefined);
      await insertItem(`${ctx.requestId}-b`);
      return "done";
    });
    expect(out).toEqual({ response: "done", replayed: false });
    expect(await items(ctx.requestId)).toEqual([`${ctx.requestId}-a`, `${ctx.requestId}-b`]);
  });
});
