/**
 * A call's work deadline against the real Postgres (deadline.ts): a transaction of a call never commits after its
 * deadline, its lock waits end there, and a keyed call rolled back at its deadline records nothing under its key.
 */
import { randomBytes } from "node:crypto";
import { sql, type Kysely } from "kysely";
import { createDb, migrateSchema } from "../../src/db";
import { createIdempotencyTable, runIdempotent, singleStatement, transaction } from "../../src/idempotency";
import { DeadlineExceeded, isLockTimeout, setCallDeadline } from "../../src/deadline";
import { toServiceError, fromServiceError } from "../../src/grpc";
import type { RequestContext, TenantContext } from "../../src/context";
import { createTestDatabase, type TestDatabase } from "../../src/testing";
import type * as grpc from "@grpc/grpc-js";

let tdb: TestDatabase;
let db: Kysely<any>;
let holder: Kysely<any>;

beforeAll(async () => {
  tdb = await createTestDatabase("kit_deadline");
  db = createDb<any>({ url: tdb.url, schema: "dl", applicationName: "kit-deadline", max: 2 });
  holder = createDb<any>({ url: tdb.url, schema: "dl", applicationName: "kit-deadline-holder", max: 1 });
  await migrateSchema(db, "dl", {
    "0001": {
      async up(m) {
        await createIdempotencyTable(m);
        await sql`create table item (name text primary key, n int not null default 0)`.execute(m);
      },
    },
  });
});

afterAll(async () => {
  await db?.destroy();
  await holder?.destroy();
  await tdb?.drop();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A call's context whose work deadline is `ms` from now (as addService records it). */
function callWithin(ms: number, keyed = false): TenantContext {
  const ctx: TenantContext = {
    requestId: `req_${randomBytes(4).toString("hex")}`,
    organizationId: `org_${randomBytes(4).toString("hex")}`,
    livemode: false,
    ...(keyed && {
      idempotency: {
        key: `k-${randomBytes(4).toString("hex")}`,
        fingerprint: randomBytes(32).toString("hex"),
        callerOrganizationId: "org_caller",
      },
    }),
  };
  setCallDeadline(ctx, Date.now() + ms);
  return ctx;
}

async function itemN(name: string): Promise<number | undefined> {
  const row = await db.selectFrom("item").select("n").where("name", "=", name).executeTakeFirst();
  return row?.n as number | undefined;
}

/** What the caller of a call that failed with `err` is told. */
const answered = (err: unknown) => fromServiceError(toServiceError(err) as grpc.ServiceError, "items");

/** Holds the row lock of `name` on another connection until the returned function is called. */
async function holdRowLock(name: string): Promise<() => Promise<void>> {
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  let locked!: () => void;
  const isLocked = new Promise<void>((r) => (locked = r));
  const done = holder.transaction().execute(async (trx) => {
    await sql`select 1 from item where name = ${name} for update`.execute(trx);
    locked();
    await released;
  });
  await isLocked;
  return async () => {
    release();
    await done;
  };
}

describe("a call's transaction under its deadline", () => {
  it("ends a lock wait at the deadline, answers resource_busy, and applies nothing once the lock is released", async () => {
    await db.insertInto("item").values({ name: "locked" }).execute();
    const release = await holdRowLock("locked");
    const started = Date.now();
    let failure: unknown;
    try {
      await transaction(db, callWithin(600), (trx) =>
        trx.updateTable("item").set({ n: 1 }).where("name", "=", "locked").execute(),
      );
    } catch (err) {
      failure = err;
    }
    const took = Date.now() - started;
    await release();
    expect(isLockTimeout(failure)).toBe(true);
    expect(took).toBeGreaterThanOrEqual(500);
    expect(took).toBeLessThan(3000); // not the lock holder's release, which comes after
    const answer = answered(failure);
    expect(answer.code).toBe("resource_busy");
    expect(answer.headers["Retry-After"]).toBe("1");
    await sleep(100);
    expect(await itemN("locked")).toBe(0);
  });

  it("rolls back instead of committing when the deadline passed during the work", async () => {
    await expect(
      transaction(db, callWithin(200), async (trx) => {
        await trx.insertInto("item").values({ name: "late" }).execute();
        await sleep(350);
      }),
    ).rejects.toBeInstanceOf(DeadlineExceeded);
    expect(await itemN("late")).toBeUndefined();
    const answer = answered(new DeadlineExceeded());
    expect(answer.code).toBe("internal_error");
    expect(answer.details).toEqual({ reason: "upstream_timeout", service: "items" });
  });

  it("does not start a single statement whose call's deadline has passed", async () => {
    const ctx = callWithin(50);
    await sleep(80);
    await expect(
      singleStatement(db, ctx, (q) => q.insertInto("item").values({ name: "never" }).execute()),
    ).rejects.toBeInstanceOf(DeadlineExceeded);
    expect(await itemN("never")).toBeUndefined();
  });

  it("commits as before within the deadline, and outside any call there is no deadline", async () => {
    await transaction(db, callWithin(5000), (trx) =>
      trx.insertInto("item").values({ name: "in-time" }).execute(),
    );
    expect(await itemN("in-time")).toBe(0);
    const job: RequestContext | null = null;
    await transaction(db, job, async (trx) => {
      await trx.insertInto("item").values({ name: "job" }).execute();
      await sleep(50);
    });
    expect(await itemN("job")).toBe(0);
  });
});

describe("a keyed call under its deadline", () => {
  const method = "/test.v1.Items/Create";
  const encode = (s: string) => Buffer.from(s, "utf8");
  const decode = (b: Uint8Array) => Buffer.from(b).toString("utf8");

  it("rolls back at the deadline, records nothing under the key, and the same key runs again", async () => {
    const ctx = callWithin(200, true);
    await expect(
      runIdempotent({ db, ctx, method, encode, decode }, async () => {
        await transaction(db, ctx, (trx) => trx.insertInto("item").values({ name: "keyed-late" }).execute());
        await sleep(350);
        return "done";
      }),
    ).rejects.toBeInstanceOf(DeadlineExceeded);
    expect(await itemN("keyed-late")).toBeUndefined();
    const recorded = await db
      .selectFrom("idempotency")
      .select("idempotency_key")
      .where("idempotency_key", "=", ctx.idempotency!.key)
      .execute();
    expect(recorded).toEqual([]);

    // The retry (a new call, the same key) runs the work once and commits it.
    const retry: TenantContext = { ...ctx, requestId: "req_retry" };
    setCallDeadline(retry, Date.now() + 5000);
    const out = await runIdempotent({ db, ctx: retry, method, encode, decode }, async () => {
      await transaction(db, retry, (trx) => trx.insertInto("item").values({ name: "keyed-late" }).execute());
      return "done";
    });
    expect(out).toEqual({ response: "done", replayed: false });
    expect(await itemN("keyed-late")).toBe(0);
  });

  it("ends a keyed call's lock wait at the deadline without a second attempt", async () => {
    await db.insertInto("item").values({ name: "keyed-locked" }).execute();
    const release = await holdRowLock("keyed-locked");
    const ctx = callWithin(500, true);
    let runs = 0;
    const started = Date.now();
    let failure: unknown;
    try {
      await runIdempotent({ db, ctx, method, encode, decode }, async () => {
        runs++;
        await transaction(db, ctx, (trx) =>
          trx.updateTable("item").set({ n: 7 }).where("name", "=", "keyed-locked").execute(),
        );
        return "done";
      });
    } catch (err) {
      failure = err;
    }
    const took = Date.now() - started;
    await release();
    expect(isLockTimeout(failure)).toBe(true);
    expect(runs).toBe(1);
    expect(took).toBeLessThan(3000); // not the lock holder's release, which comes after
    expect(await itemN("keyed-locked")).toBe(0);
  });
});
