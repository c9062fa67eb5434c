/**
 * runIdempotent against the real Postgres, on a small schema of its own: the paths a service's tests cannot
 * provoke on purpose (a record committed between the key's read and the upsert; work that catches the failure
 * of one of its transactions and goes on; a refusal after a write, which runs the work a second time; the
 * record's statement or the commit failing), and the messages a call sends.
 */
import { randomBytes } from "node:crypto";
import { sql, type Kysely, type Migration } from "kysely";
import { createDb, migrateSchema } from "../../src/db";
import { ApiError, validationFailed } from "@dpp/contract";
import {
  createIdempotencyTable,
  idempotencyMigrations,
  migrateIdempotency,
  runIdempotent,
  singleStatement,
  type CallScope,
  transaction,
} from "../../src/idempotency";
import type { TenantContext } from "../../src/context";
import { createTestDatabase, watchStatements, type TestDatabase } from "../../src/testing";

let tdb: TestDatabase;
let db: Kysely<any>;
let other: Kysely<any>;
/** A pool of one connection: a call that left its transaction open would leave it to the next. */
let one: Kysely<any>;
/** Every message the pool of `one` sends while recording (one query, one round trip). */
let recording: string[] | undefined;
let restoreQuery: () => void = () => undefined;

/** The idempotency table and a table of items, the work's writes. */
const ITEMS_MIGRATION: Migration = {
  async up(m) {
    await createIdempotencyTable(m);
    await m.schema
      .createTable("item")
      .addColumn("name", "text", (c) => c.primaryKey())
      .execute();
  },
};

beforeAll(async () => {
  restoreQuery = watchStatements("kit-idem-one", (text) => recording?.push(text));
  tdb = await createTestDatabase("kit_idem");
  db = createDb<any>({ url: tdb.url, schema: "idem", applicationName: "kit-idem-test", max: 2 });
  other = createDb<any>({ url: tdb.url, schema: "idem", applicationName: "kit-idem-other", max: 1 });
  one = createDb<any>({ url: tdb.url, schema: "idem", applicationName: "kit-idem-one", max: 1 });
  await migrateSchema(db, "idem", {
    "0001": ITEMS_MIGRATION,
    "0002": {
      async up(m) {
        // Checked at commit: a duplicate name fails the commit, not the insert.
        await sql`create table deferred_item (name text,
          constraint deferred_item_uq unique (name) deferrable initially deferred)`.execute(m);
        // The record's statement fails for the keys listed here, as a full disk would.
        await sql`create table unrecordable (idempotency_key text primary key)`.execute(m);
        await sql`create function refuse_record() returns trigger language plpgsql as $$
          begin if exists (select from unrecordable u where u.idempotency_key = new.idempotency_key) then
            raise exception 'no room for the record'; end if; return new; end $$`.execute(m);
        await sql`create trigger refuse_record before insert on idempotency
          for each row execute function refuse_record()`.execute(m);
      },
    },
    "0003": {
      async up(m) {
        // Every kind of value a statement binds, for the work statement that travels as an EXECUTE.
        await sql`create table typed_item (name text primary key, n int, big bigint, ratio numeric, flag boolean,
          bytes bytea, tags text[], at timestamptz, doc jsonb, note text)`.execute(m);
      },
    },
  });
});

afterAll(async () => {
  restoreQuery();
  await db?.destroy();
  await other?.destroy();
  await one?.destroy();
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

const insertItem = (call: CallScope, name: string) =>
  transaction(db, call, (trx) => trx.insertInto("item").values({ name }).execute());
const insertItemAlone = (call: CallScope, name: string) =>
  singleStatement(db, call, (q) => q.insertInto("item").values({ name }).execute());

async function items(prefix: string): Promise<string[]> {
  const rows = await db.selectFrom("item").select("name").where("name", "like", `${prefix}%`).execute();
  return rows.map((r: { name: string }) => r.name).sort();
}

describe("runIdempotent", () => {
  it("answers a record committed after its read of the key, and undoes its own work", async () => {
    const ctx = keyed();
    const i = ctx.idempotency!;
    const out = await call(ctx, async () => {
      await insertItem(ctx, `${ctx.requestId}-mine`);
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
      await insertItemAlone(ctx, `${ctx.requestId}-mine`);
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
      await insertItemAlone(ctx, `${ctx.requestId}-one`);
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
        await write(ctx, `${ctx.requestId}-${runs}`);
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

  it("records a refusal as it is answered, within the bounds of an error answer, and replays it so", async () => {
    const ctx = keyed();
    const name = "m".repeat(200_000);
    const work = async (): Promise<string> => {
      throw validationFailed([
        { source: { pointer: `/data/${name}` }, rule: "unknown_field", message: `Unknown field "${name}".` },
      ]);
    };
    const first = await call(ctx, work).catch((e: ApiError) => e);
    const pointer = `/data/${"m".repeat(200)}\u2026`;
    expect((first as ApiError).details.issues).toEqual([
      expect.objectContaining({ source: { pointer }, pointer_truncated: true }),
    ]);
    expect(((await recordOf(ctx))!.error as string).length).toBeLessThan(1000);
    const replay = await call(ctx, work).catch((e: ApiError) => e);
    expect([(replay as ApiError).details, (replay as ApiError).message]).toEqual([
      (first as ApiError).details,
      (first as ApiError).message,
    ]);
  });

  it("records a 5xx of the spec's own (storage_unavailable) and replays it under the same key, as its retry rule 2 says", async () => {
    const ctx = keyed();
    let runs = 0;
    const work = async (): Promise<string> => {
      runs++;
      throw new ApiError("storage_unavailable", undefined, {}, { "Retry-After": "1" });
    };
    await expect(call(ctx, work)).rejects.toMatchObject({ code: "storage_unavailable" });
    await expect(call(ctx, work)).rejects.toMatchObject({ code: "storage_unavailable" });
    expect(runs).toBe(1);
  });

  it("records no internal_error (nothing was applied, decision 0044): its writes are rolled back and the key runs again", async () => {
    const ctx = keyed();
    let runs = 0;
    const work = async (): Promise<string> => {
      runs++;
      await insertItem(ctx, `${ctx.requestId}-${runs}`);
      // What a call to another service answers when it is out of reach.
      if (runs === 1)
        throw new ApiError(
          "internal_error",
          "Unavailable.",
          { reason: "upstream_unavailable" },
          { "Retry-After": "1" },
        );
      return "done";
    };
    await expect(call(ctx, work)).rejects.toMatchObject({
      code: "internal_error",
      details: { reason: "upstream_unavailable" },
    });
    expect(await items(ctx.requestId)).toEqual([]);
    expect(await call(ctx, work)).toEqual({ response: "done", replayed: false });
    expect(await items(ctx.requestId)).toEqual([`${ctx.requestId}-2`]);
    expect(runs).toBe(2);
  });

  it("runs a single-statement write on the pool outside a call: committed when it returns", async () => {
    const name = `alone-${randomBytes(4).toString("hex")}`;
    await insertItemAlone(null, name);
    await expect(insertItemAlone(null, name)).rejects.toMatchObject({ code: "23505" });
    const rows = await other.selectFrom("item").select("name").where("name", "=", name).execute();
    expect(rows).toHaveLength(1);
  });

  it("joins only the transactions opened for the call's own context: others commit on their own", async () => {
    const ctx = keyed();
    const neighbour = keyed();
    let runs = 0;
    const out = await call(ctx, async () => {
      runs++;
      await insertItemAlone(ctx, `${ctx.requestId}-joined-${runs}`);
      if (runs === 1) {
        await insertItemAlone(null, `${ctx.requestId}-job`);
        // Another keyed call runs meanwhile: its writes join its own transaction, not this one's.
        await call(neighbour, async () => {
          await insertItem(neighbour, `${neighbour.requestId}-theirs`);
          return "theirs";
        });
      }
      throw new ApiError("validation_failed", "Refused after writing.");
    }).catch((err: unknown) => err);
    expect(out).toMatchObject({ code: "validation_failed" });
    // The refusal undid the call's own write only.
    expect(await items(ctx.requestId)).toEqual([`${ctx.requestId}-job`]);
    expect(await items(neighbour.requestId)).toEqual([`${neighbour.requestId}-theirs`]);
    expect(await call(neighbour, async () => "never")).toEqual({ response: "theirs", replayed: true });
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
      await transaction(db, ctx, async (trx) => {
        await trx
          .insertInto("item")
          .values({ name: `${ctx.requestId}-failed` })
          .execute();
        throw new Error("changed its mind");
      }).catch(() => undefined);
      await insertItem(ctx, `${ctx.requestId}-kept`);
      return "done";
    });
    expect(out).toEqual({ response: "done", replayed: false });
    expect(await items(ctx.requestId)).toEqual([`${ctx.requestId}-kept`]);
  });

  it("keeps what an earlier transaction wrote when a later one fails and the work goes on", async () => {
    const ctx = keyed();
    const out = await call(ctx, async () => {
      await insertItem(ctx, `${ctx.requestId}-a`);
      // A database error: the later transaction's savepoint is rolled back, the call's transaction goes on.
      await insertItem(ctx, `${ctx.requestId}-a`).catch(() => undefined);
      await insertItem(ctx, `${ctx.requestId}-b`);
      return "done";
    });
    expect(out).toEqual({ response: "done", replayed: false });
    expect(await items(ctx.requestId)).toEqual([`${ctx.requestId}-a`, `${ctx.requestId}-b`]);
  });
});

/** What a message does: its statements' kinds joined by " + " ("begin", "lock and read key", "insert item", ...). */
function kinds(text: string): string {
  return text
    .split(/;\s*\n/)
    .map((statement) => {
      const st = statement.replace(/\s+/g, " ").replace(/"/g, "").trim().toLowerCase();
      if (/^(begin|commit|rollback|savepoint|rollback to savepoint)( \w+)?$/.test(st))
        return st.replace(/ idempotent_work$/, "");
      if (/^prepare kit_idem_(open|claim|record)\(/.test(st)) return "prepare key statement";
      // Prepared (EXECUTE), or the call itself on a pool that prepares nothing.
      if (/^(execute kit_idem_open|select \* from kit_idempotency_open)\(/.test(st))
        return "lock and read key";
      if (/^(execute kit_idem_claim|select kit_idempotency_claim)\(/.test(st)) return "claim key";
      if (/^execute kit_\d+_\d+\(/.test(st)) return "execute prepared";
      if (/^(execute kit_idem_record|select kit_idempotency_record)\(/.test(st)) return "record key";
      const m = /^insert into (\w+)/.exec(st);
      return m ? `insert ${m[1]}` : st.slice(0, 40);
    })
    .join(" + ");
}

/** The message that prepares the key's three statements, once per connection (before its first keyed call). */
const PREPARE_KEY_STATEMENTS = "prepare key statement + prepare key statement + prepare key statement";

/**
 * The messages the pool of `one` sent while `call` ran, by kind: one message, one round trip. The preparation of
 * the key's statements is left out (it comes once per connection, whichever test first used it: see the test of a
 * fresh connection).
 */
async function messagesOf(call: () => Promise<unknown>): Promise<string[]> {
  const sent: string[] = [];
  recording = sent;
  try {
    await call();
  } finally {
    recording = undefined;
  }
  return sent.map(kinds).filter((kind) => kind !== PREPARE_KEY_STATEMENTS);
}

const callOn = (on: Kysely<any>, ctx: TenantContext, work: () => Promise<string>, openWithWork = false) =>
  runIdempotent({ db: on, ctx, method: METHOD, encode, decode, openWithWork }, work);

const insertItemOn = (on: Kysely<any>, call: CallScope, name: string) =>
  singleStatement(on, call, (q) => q.insertInto("item").values({ name }).execute());

/** A pool of one connection of its own, for a test that watches or breaks what a fresh connection does. */
const onePool = (applicationName: string, schema = "idem", preparedStatements?: number) =>
  createDb<any>({ url: tdb.url, schema, applicationName, max: 1, preparedStatements });

/** A keyed call on `on` whose work inserts the item `name` and answers "written". */
const writeOn = (on: Kysely<any>, ctx: TenantContext, name: string, openWithWork: boolean) =>
  runIdempotent({ db: on, ctx, method: METHOD, encode, decode, openWithWork }, async () => {
    await insertItemOn(on, ctx, name);
    return "written";
  });

/** The record of ctx's key, if any. */
async function recordOf(ctx: TenantContext) {
  return other
    .selectFrom("idempotency")
    .selectAll()
    .where("organization_id", "=", ctx.organizationId)
    .where("idempotency_key", "=", ctx.idempotency!.key)
    .executeTakeFirst();
}

/** The state of the single connection of `one` as Postgres sees it ("idle", "idle in transaction", ...). */
async function stateOfOne(): Promise<string[]> {
  const { rows } = await sql<{ state: string }>`
    select state from pg_stat_activity where application_name = 'kit-idem-one'`.execute(other);
  return rows.map((r) => r.state);
}

/** The key's lock as a process of the previous kit took it (its text bound as a value): held by `other` until fn settles. */
async function holdingTheKey<T>(ctx: TenantContext, fn: () => Promise<T>): Promise<T> {
  const i = ctx.idempotency!;
  const scope = `idem:${ctx.organizationId}:${ctx.livemode}:${i.callerOrganizationId}:${i.key}`;
  return other.transaction().execute(async (trx) => {
    const { rows } = await sql<{ locked: boolean }>`
      select pg_try_advisory_xact_lock(hashtextextended(${scope} || current_schema(), 0)) as locked`.execute(
      trx,
    );
    expect(rows[0]?.locked).toBe(true);
    return fn();
  });
}

describe("the messages of a call under a key", () => {
  it("a call that runs: begin with the key's lock and read, the work's statement, the record with commit", async () => {
    const ctx = keyed();
    const sent = await messagesOf(() =>
      callOn(one, ctx, async () => {
        await insertItemOn(one, ctx, `${ctx.requestId}-one`);
        return "written";
      }),
    );
    expect(sent).toEqual(["begin + lock and read key", "insert item", "record key + commit"]);
    expect(await items(ctx.requestId)).toEqual([`${ctx.requestId}-one`]);
    expect(await callOn(one, ctx, async () => "never")).toEqual({ response: "written", replayed: true });
  });

  it("a replay: begin with the read, then commit; a key another process holds: begin with the read, then rollback", async () => {
    const ctx = keyed();
    await callOn(one, ctx, async () => "first");
    expect(await messagesOf(() => callOn(one, ctx, async () => "never"))).toEqual([
      "begin + lock and read key",
      "commit",
    ]);
    const held = keyed();
    let refusal: unknown;
    const sent = await holdingTheKey(held, () =>
      messagesOf(() =>
        callOn(one, held, async () => "never").catch((err: unknown) => {
          refusal = err;
        }),
      ),
    );
    expect(refusal).toMatchObject({ code: "resource_busy", headers: { "Retry-After": "1" } });
    expect(sent).toEqual(["begin + lock and read key", "rollback"]);
    expect(await stateOfOne()).toEqual(["idle"]);
  });

  it("a refusal after a write: the second attempt's savepoint goes with its begin, its rollback with the record and commit", async () => {
    const ctx = keyed();
    let runs = 0;
    const sent = await messagesOf(() =>
      callOn(one, ctx, async () => {
        runs++;
        await insertItemOn(one, ctx, `${ctx.requestId}-${runs}`);
        throw new ApiError("validation_failed", "Refused after writing.");
      }).catch(() => undefined),
    );
    expect(sent).toEqual([
      "begin + lock and read key",
      "insert item",
      "rollback",
      "begin + lock and read key + savepoint",
      "insert item",
      "rollback to savepoint + record key + commit",
    ]);
    expect(await items(ctx.requestId)).toEqual([]);
    expect(await recordOf(ctx)).toMatchObject({
      response: null,
      error: expect.stringContaining("validation_failed"),
    });
  });
});

describe("the key opened with the work's first statement (openWithWork)", () => {
  /** The insert of `insertItemOn(one, ...)` prepared on the connection of `one`, as any earlier call leaves it. */
  const prepareInsert = () => insertItemOn(one, null, `prepared-${randomBytes(4).toString("hex")}`);

  it("a call that runs: begin and the key's claim go with the work's prepared statement, then the record with commit", async () => {
    await prepareInsert();
    const ctx = keyed();
    const sent = await messagesOf(() =>
      callOn(
        one,
        ctx,
        async () => {
          await insertItemOn(one, ctx, `${ctx.requestId}-one`);
          return "written";
        },
        true,
      ),
    );
    expect(sent).toEqual(["begin + claim key + execute prepared", "record key + commit"]);
    expect(await items(ctx.requestId)).toEqual([`${ctx.requestId}-one`]);
    expect(await recordOf(ctx)).toMatchObject({ request_id: ctx.requestId });
    expect(await stateOfOne()).toEqual(["idle"]);
  });

  it("on a connection that has not prepared the work's statement yet: the claim goes first, alone (the key's statements prepared once before)", async () => {
    const fresh = onePool("kit-idem-fresh");
    const unwatch = watchStatements("kit-idem-fresh", (text) => recording?.push(text));
    try {
      const callFresh = async () => {
        const ctx = keyed();
        const sent: string[] = [];
        recording = sent;
        try {
          await writeOn(fresh, ctx, `${ctx.requestId}-fresh`, true);
        } finally {
          recording = undefined;
        }
        expect(await items(ctx.requestId)).toEqual([`${ctx.requestId}-fresh`]);
        return sent.map(kinds);
      };
      // The key's statements are prepared first, in a message of their own, once per connection.
      expect(await callFresh()).toEqual([
        PREPARE_KEY_STATEMENTS,
        "begin + claim key",
        "insert item",
        "record key + commit",
      ]);
      expect(await callFresh()).toEqual(["begin + claim key + execute prepared", "record key + commit"]);
    } finally {
      unwatch();
      await fresh.destroy();
    }
  });

  it("on a pool that prepares nothing (preparedStatements 0): the key's calls travel as statements, and a retry replays", async () => {
    const plain = onePool("kit-idem-plain", "idem", 0);
    const sent: string[] = [];
    const unwatch = watchStatements("kit-idem-plain", (text) => sent.push(text));
    try {
      const ctx = keyed();
      const name = `${ctx.requestId}-plain`;
      expect(await writeOn(plain, ctx, name, true)).toEqual({ response: "written", replayed: false });
      expect(await writeOn(plain, ctx, name, false)).toEqual({ response: "written", replayed: true });
      expect(sent.map(kinds)).toEqual([
        "begin + claim key",
        "insert item",
        "record key + commit",
        "begin + lock and read key",
        "commit",
      ]);
      expect(sent.join("\n")).not.toMatch(/\b(prepare|execute) /);
      expect(await items(ctx.requestId)).toEqual([`${ctx.requestId}-plain`]);
    } finally {
      unwatch();
      await plain.destroy();
    }
  });

  it("a connection whose preparation failed half-way (a function missing) prepares all three once the function is back", async () => {
    const late = onePool("kit-idem-late", "idem_late");
    try {
      await migrateSchema(late, "idem_late", { "0001": ITEMS_MIGRATION });
      // As on a database whose kit migrations are behind the code: the open function exists, the claim not.
      await sql`drop function kit_idempotency_claim(text, boolean, text, text)`.execute(late);
      const ctx = keyed();
      const run = () => writeOn(late, ctx, ctx.requestId, true);
      await expect(run()).rejects.toMatchObject({ code: "42883" });
      await idempotencyMigrations["0003_claim_own_body"]!.up(late);
      expect(await run()).toEqual({ response: "written", replayed: false });
      expect(await run()).toEqual({ response: "written", replayed: true });
    } finally {
      await late.destroy();
    }
  });

  it("a recorded key: the claim fails the work's statement, which writes nothing, and the call answers the record", async () => {
    await prepareInsert();
    const ctx = keyed();
    let runs = 0;
    const work = async () => {
      runs++;
      await insertItemOn(one, ctx, `${ctx.requestId}-${runs}`);
      return `run ${runs}`;
    };
    expect(await callOn(one, ctx, work, true)).toEqual({ response: "run 1", replayed: false });
    const sent = await messagesOf(async () =>
      expect(await callOn(one, ctx, work, true)).toEqual({ response: "run 1", replayed: true }),
    );
    expect(sent).toEqual([
      "begin + claim key + execute prepared",
      "rollback",
      "begin + lock and read key",
      "commit",
    ]);
    // The work's code before its statement ran again; its statement did not write.
    expect(runs).toBe(2);
    expect(await items(ctx.requestId)).toEqual([`${ctx.requestId}-1`]);
    expect(await stateOfOne()).toEqual(["idle"]);
  });

  it("a key another process holds: the claim fails the work's statement, and the call is answered busy", async () => {
    await prepareInsert();
    const held = keyed();
    let refusal: unknown;
    const sent = await holdingTheKey(held, () =>
      messagesOf(() =>
        callOn(
          one,
          held,
          async () => {
            await insertItemOn(one, held, `${held.requestId}-never`);
            return "never";
          },
          true,
        ).catch((err: unknown) => {
          refusal = err;
        }),
      ),
    );
    expect(refusal).toMatchObject({ code: "resource_busy", headers: { "Retry-After": "1" } });
    expect(sent).toEqual([
      "begin + claim key + execute prepared",
      "rollback",
      "begin + lock and read key",
      "rollback",
    ]);
    expect(await items(held.requestId)).toEqual([]);
    expect(await stateOfOne()).toEqual(["idle"]);
  });

  it("work that refuses before any statement: the key is opened, then the refusal recorded and replayed", async () => {
    const ctx = keyed();
    const refuse = async (): Promise<string> => {
      throw new ApiError("validation_failed", "Refused before writing.");
    };
    const sent = await messagesOf(() => callOn(one, ctx, refuse, true).catch(() => undefined));
    expect(sent).toEqual(["begin + lock and read key", "record key + commit"]);
    await expect(callOn(one, ctx, refuse, true)).rejects.toMatchObject({
      code: "validation_failed",
      headers: { "Idempotent-Replayed": "true" },
    });
  });

  it("the work's statement as an EXECUTE gets every value as a bound statement does: text, numbers, bytes, arrays, a date, JSON, null", async () => {
    const row = (name: string) => ({
      name,
      n: -42,
      big: 9007199254740991,
      ratio: "12345.678900",
      flag: false,
      bytes: Buffer.from(Array.from({ length: 256 }, (_, i) => i)),
      tags: ["a'b", 'c"d', "e\\f", "g,h", "{i}", "", "🙂"],
      at: new Date("2026-11-27T03:04:05.678Z"),
      doc: { quote: "it's", nested: { backslash: "\\", newline: "a\nb" }, list: [1, null, true] },
      note: null,
    });
    const insertTyped = (on: Kysely<any>, scope: CallScope, name: string) =>
      singleStatement(on, scope, (q) =>
        q.insertInto("typed_item").values(row(name)).returningAll().executeTakeFirst(),
      );
    const base = `typed-${randomBytes(4).toString("hex")}`;
    // Bound (and prepared on the connection), then the same statement as an EXECUTE under a key.
    const bound = await insertTyped(one, null, `${base}-bound`);
    const ctx = keyed();
    let executed: unknown;
    const sent = await messagesOf(() =>
      callOn(
        one,
        ctx,
        async () => {
          executed = await insertTyped(one, ctx, `${base}-executed`);
          return "typed";
        },
        true,
      ),
    );
    expect(sent).toEqual(["begin + claim key + execute prepared", "record key + commit"]);
    expect(executed).toEqual({ ...bound, name: `${base}-executed` });
    expect(bound).toMatchObject({ ...row(`${base}-bound`), big: 9007199254740991 });
  });

  it("runs the work's statement once under concurrent calls: every other call is answered busy or replays its answer", async () => {
    const many = createDb<any>({ url: tdb.url, schema: "idem", applicationName: "kit-idem-many-ow", max: 8 });
    try {
      const ctx = keyed();
      let runs = 0;
      // Each call its own context object with the same key, as each request of a service has.
      const callOnce = () => {
        const own = { ...ctx };
        const work = async () => {
          const run = ++runs;
          await new Promise((r) => setTimeout(r, 50));
          await insertItemOn(many, own, `${ctx.requestId}-${run}`);
          return `run ${run}`;
        };
        return callOn(many, own, work, true);
      };
      const outcomes = await Promise.all(
        Array.from({ length: 8 }, () => callOnce().catch((err: unknown) => err)),
      );
      const first = outcomes.filter((o) => (o as { replayed?: boolean }).replayed === false);
      expect(first).toHaveLength(1);
      const answer = (first[0] as { response: string }).response;
      for (const o of outcomes)
        if (o !== first[0])
          expect([{ response: answer, replayed: true }, "resource_busy"]).toContainEqual(
            o instanceof ApiError ? o.code : o,
          );
      expect(await items(ctx.requestId)).toEqual([`${ctx.requestId}-${answer.slice(4)}`]);
      for (let n = 0; n < 3; n++) expect(await callOnce()).toEqual({ response: answer, replayed: true });
      expect(await items(ctx.requestId)).toHaveLength(1);
    } finally {
      await many.destroy();
    }
  });
});

describe("a call whose record or commit fails", () => {
  it("the record's statement fails: that failure is answered, the work's writes rolled back, nothing recorded; the key runs again", async () => {
    const ctx = keyed();
    await other.insertInto("unrecordable").values({ idempotency_key: ctx.idempotency!.key }).execute();
    let runs = 0;
    const work = async () => {
      runs++;
      await insertItemOn(one, ctx, `${ctx.requestId}-${runs}`);
      return `run ${runs}`;
    };
    const failed = await callOn(one, ctx, work).catch((err: unknown) => err);
    expect(failed).not.toBeInstanceOf(ApiError);
    expect(failed).toMatchObject({ message: "no room for the record" });
    expect(await items(ctx.requestId)).toEqual([]);
    expect(await recordOf(ctx)).toBeUndefined();
    // The connection was given back out of any transaction, and serves the next call.
    expect(await stateOfOne()).toEqual(["idle"]);
    await other.deleteFrom("unrecordable").where("idempotency_key", "=", ctx.idempotency!.key).execute();
    expect(await callOn(one, ctx, work)).toEqual({ response: "run 2", replayed: false });
    expect(await items(ctx.requestId)).toEqual([`${ctx.requestId}-2`]);
  });

  it("the commit fails (a deferred constraint): that failure is answered, nothing recorded; the key runs again", async () => {
    const ctx = keyed();
    let runs = 0;
    const work = async () => {
      runs++;
      await transaction(one, ctx, (trx) =>
        trx
          .insertInto("deferred_item")
          .values(runs === 1 ? [{ name: ctx.requestId }, { name: ctx.requestId }] : [{ name: ctx.requestId }])
          .execute(),
      );
      return `run ${runs}`;
    };
    const failed = await callOn(one, ctx, work).catch((err: unknown) => err);
    expect(failed).toMatchObject({ code: "23505", constraint: "deferred_item_uq" });
    expect(await recordOf(ctx)).toBeUndefined();
    expect(await stateOfOne()).toEqual(["idle"]);
    expect(await callOn(one, ctx, work)).toEqual({ response: "run 2", replayed: false });
    const { rows } = await sql<{ n: number }>`
      select count(*)::int as n from deferred_item where name = ${ctx.requestId}`.execute(other);
    expect(rows[0]?.n).toBe(1);
  });
});

describe("one key, concurrent calls", () => {
  it("runs the work once: every other call is answered busy (Retry-After) or replays its answer", async () => {
    const many = createDb<any>({ url: tdb.url, schema: "idem", applicationName: "kit-idem-many", max: 8 });
    try {
      const ctx = keyed();
      let runs = 0;
      const work = async () => {
        runs++;
        await new Promise((r) => setTimeout(r, 50));
        await insertItemOn(many, ctx, `${ctx.requestId}-${runs}`);
        return `run ${runs}`;
      };
      const outcomes = await Promise.all(
        Array.from({ length: 8 }, () => callOn(many, ctx, work).catch((err: unknown) => err)),
      );
      expect(runs).toBe(1);
      expect(outcomes.filter((o) => (o as { replayed?: boolean }).replayed === false)).toEqual([
        { response: "run 1", replayed: false },
      ]);
      for (const o of outcomes)
        if ((o as { replayed?: boolean }).replayed !== false)
          expect([{ response: "run 1", replayed: true }, "resource_busy"]).toContainEqual(
            o instanceof ApiError ? o.code : o,
          );
      expect(await items(ctx.requestId)).toEqual([`${ctx.requestId}-1`]);
      // Later calls, one after the other, replay it.
      for (let n = 0; n < 3; n++)
        expect(await callOn(many, ctx, work)).toEqual({ response: "run 1", replayed: true });
      expect(runs).toBe(1);
    } finally {
      await many.destroy();
    }
  });
});

describe("a key used again for another request", () => {
  /** The same key, organization, mode and caller as `ctx`, for another request: another request id and fingerprint. */
  const anotherRequest = (
    ctx: TenantContext,
    fingerprint = randomBytes(32).toString("hex"),
  ): TenantContext => ({
    ...ctx,
    requestId: `req_${randomBytes(4).toString("hex")}`,
    idempotency: { ...ctx.idempotency!, fingerprint },
  });
  const conflict = (ctx: TenantContext) => ({
    code: "idempotency_conflict",
    status: 409,
    details: { idempotency_key: ctx.idempotency!.key },
  });

  it("a recorded answer: another fingerprint is idempotency_conflict, the work not run, the record kept and replayed to its own request", async () => {
    for (const openWithWork of [false, true]) {
      const ctx = keyed();
      let runs = 0;
      const work = (c: TenantContext) => async () => {
        runs++;
        await insertItemOn(one, c, `${ctx.requestId}-${runs}`);
        return `run ${runs}`;
      };
      expect(await callOn(one, ctx, work(ctx), openWithWork)).toEqual({ response: "run 1", replayed: false });
      const other = anotherRequest(ctx);
      const err = await callOn(one, other, work(other), openWithWork).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ApiError);
      expect(err).toMatchObject(conflict(ctx));
      expect(await items(ctx.requestId)).toEqual([`${ctx.requestId}-1`]);
      expect(await recordOf(ctx)).toMatchObject({
        fingerprint: ctx.idempotency!.fingerprint,
        request_id: ctx.requestId,
      });
      expect(await callOn(one, ctx, work(ctx), openWithWork)).toEqual({ response: "run 1", replayed: true });
      expect(await stateOfOne()).toEqual(["idle"]);
    }
  });

  it("a recorded refusal: another fingerprint is idempotency_conflict, not the refusal replayed", async () => {
    const ctx = keyed();
    let runs = 0;
    const refuse = async (): Promise<string> => {
      runs++;
      throw new ApiError("validation_failed", "Refused.", { run: runs });
    };
    await expect(call(ctx, refuse)).rejects.toMatchObject({ code: "validation_failed" });
    await expect(call(anotherRequest(ctx), async () => "never")).rejects.toMatchObject(conflict(ctx));
    await expect(call(ctx, refuse)).rejects.toMatchObject({
      code: "validation_failed",
      headers: { "Idempotent-Replayed": "true" },
    });
    expect(runs).toBe(1);
  });

  it("the same fingerprint under another method is idempotency_conflict", async () => {
    const ctx = keyed();
    expect(await call(ctx, async () => "created")).toEqual({ response: "created", replayed: false });
    const again = anotherRequest(ctx, ctx.idempotency!.fingerprint);
    const other = runIdempotent(
      { db, ctx: again, method: "/test.v1.Items/Delete", encode, decode },
      async () => "deleted",
    );
    await expect(other).rejects.toMatchObject(conflict(ctx));
  });

  it("a refusal recorded under one method is not replayed to a call of another method with the same fingerprint", async () => {
    const ctx = keyed();
    const refuse = async (): Promise<string> => {
      throw new ApiError("wrong_status", "Refused.");
    };
    await expect(call(ctx, refuse)).rejects.toMatchObject({ code: "wrong_status" });
    const again = anotherRequest(ctx, ctx.idempotency!.fingerprint);
    const publish = runIdempotent(
      { db: one, ctx: again, method: "/test.v1.Items/Publish", encode, decode, openWithWork: true },
      async () => {
        await insertItemOn(one, again, `${ctx.requestId}-published`);
        return "published";
      },
    );
    await expect(publish).rejects.toMatchObject(conflict(ctx));
    expect(await items(ctx.requestId)).toEqual([]);
  });

  it("two calling organizations under one key on the same organization each run once and replay their own answer", async () => {
    const manager = keyed();
    manager.idempotency!.callerOrganizationId = "org_manager";
    const client = anotherRequest(manager);
    client.idempotency = { ...client.idempotency!, callerOrganizationId: manager.organizationId };
    for (const [ctx, name] of [
      [manager, "by the manager"],
      [client, "by the client"],
    ] as const) {
      const work = async () => {
        await insertItemOn(one, ctx, `${manager.requestId}-${name}`);
        return name;
      };
      expect(await callOn(one, ctx, work, true)).toEqual({ response: name, replayed: false });
    }
    for (const [ctx, name] of [
      [manager, "by the manager"],
      [client, "by the client"],
    ] as const)
      expect(await callOn(one, ctx, async () => "never", true)).toEqual({ response: name, replayed: true });
    expect(await items(manager.requestId)).toEqual([
      `${manager.requestId}-by the client`,
      `${manager.requestId}-by the manager`,
    ]);
  });

  it("a record of another request committed after the call's read: idempotency_conflict, and the call's own work undone", async () => {
    const ctx = keyed();
    const i = ctx.idempotency!;
    const out = call(ctx, async () => {
      await insertItem(ctx, `${ctx.requestId}-mine`);
      // Another request under the same key held the lock, and committed its answer just after this call read the key.
      await other
        .insertInto("idempotency")
        .values({
          organization_id: ctx.organizationId,
          livemode: ctx.livemode,
          caller_organization_id: i.callerOrganizationId,
          idempotency_key: i.key,
          fingerprint: "0".repeat(64),
          method: METHOD,
          request_id: "req_first",
          response: encode("the first answer"),
          error: null,
        })
        .execute();
      return "the second answer";
    });
    await expect(out).rejects.toMatchObject(conflict(ctx));
    expect(await items(ctx.requestId)).toEqual([]);
    expect(await recordOf(ctx)).toMatchObject({ fingerprint: "0".repeat(64), request_id: "req_first" });
  });

  it("the same key in another mode or from another calling organization is another record: it runs", async () => {
    const ctx = keyed();
    expect(await call(ctx, async () => "first")).toEqual({ response: "first", replayed: false });
    const live = { ...anotherRequest(ctx), livemode: true };
    expect(await call(live, async () => "live")).toEqual({ response: "live", replayed: false });
    const caller = anotherRequest(ctx);
    caller.idempotency = { ...caller.idempotency!, callerOrganizationId: "org_another_caller" };
    expect(await call(caller, async () => "another caller")).toEqual({
      response: "another caller",
      replayed: false,
    });
    const organization = { ...anotherRequest(ctx), organizationId: `org_${randomBytes(4).toString("hex")}` };
    expect(await call(organization, async () => "another organization")).toEqual({
      response: "another organization",
      replayed: false,
    });
    expect(await call(ctx, async () => "never")).toEqual({ response: "first", replayed: true });
  });
});

describe("values written into the kit's statements", () => {
  it("records and replays a key, an answer and a refusal holding quotes, backslashes, newlines and every byte", async () => {
    const bytes = Buffer.from(Array.from({ length: 256 }, (_, i) => 255 - i));
    const ctx = keyed();
    ctx.idempotency!.key = `k'\\"; delete from item; --\n🙂-${randomBytes(4).toString("hex")}`;
    const opts = {
      db,
      ctx,
      method: METHOD,
      encode: (b: Buffer) => b,
      decode: (b: Uint8Array) => Buffer.from(b),
    };
    expect(await runIdempotent(opts, async () => bytes)).toEqual({ response: bytes, replayed: false });
    expect(await runIdempotent(opts, async () => Buffer.from("never"))).toEqual({
      response: bytes,
      replayed: true,
    });

    const refused = keyed();
    refused.idempotency!.key = `r'\\x41 $1 /* 🙂 -${randomBytes(4).toString("hex")}`;
    const message = "It's a \\ \"refusal\"\nwith $1 and ' -- 🙂";
    const details = { note: "'; drop table item; --", nested: { quote: "\\'" } };
    const refuse = async (): Promise<string> => {
      throw new ApiError("validation_failed", message, details);
    };
    await expect(call(refused, refuse)).rejects.toMatchObject({ message, details });
    await expect(call(refused, refuse)).rejects.toMatchObject({
      message,
      details,
      headers: { "Idempotent-Replayed": "true" },
    });
    expect(await recordOf(refused)).toMatchObject({ idempotency_key: refused.idempotency!.key });
  });
});

describe("an idempotency table made by an earlier kit", () => {
  it("is upgraded by migrateIdempotency: its jsonb refusals become text, calls run and replay, and a second run changes nothing", async () => {
    // The table as the first kit made it: refusals as jsonb, and no functions.
    const schema = `idem_old_${randomBytes(3).toString("hex")}`;
    const old = createDb<any>({ url: tdb.url, schema, applicationName: "kit-idem-old", max: 1 });
    try {
      await sql`create schema ${sql.id(schema)}`.execute(old);
      await sql`create table idempotency (organization_id text not null, livemode boolean not null,
        caller_organization_id text not null, idempotency_key text not null, fingerprint text not null,
        method text not null, request_id text not null, response bytea, error jsonb,
        created_at timestamptz not null default now(),
        constraint idempotency_pk primary key (organization_id, livemode, caller_organization_id, idempotency_key))`.execute(
        old,
      );
      const refused = keyed();
      await sql`insert into idempotency (organization_id, livemode, caller_organization_id, idempotency_key,
          fingerprint, method, request_id, error)
        values (${refused.organizationId}, false, 'org_caller', ${refused.idempotency!.key},
          ${refused.idempotency!.fingerprint}, ${METHOD}, 'req_first',
          ${JSON.stringify({ code: "already_exists", message: "Taken.", details: { x: 1 }, headers: {} })}::jsonb)`.execute(
        old,
      );
      await migrateIdempotency(tdb.url, schema);
      await migrateIdempotency(tdb.url, schema);
      const { rows } = await sql<{ data_type: string }>`
        select data_type from information_schema.columns
        where table_schema = ${schema} and table_name = 'idempotency' and column_name = 'error'`.execute(old);
      expect(rows[0]!.data_type).toBe("text");

      const replay = runIdempotent(
        { db: old, ctx: refused, method: METHOD, encode, decode },
        async () => "never",
      );
      await expect(replay).rejects.toMatchObject({
        code: "already_exists",
        message: "Taken.",
        details: { x: 1 },
      });
      const fresh = keyed();
      const call = () =>
        runIdempotent({ db: old, ctx: fresh, method: METHOD, encode, decode }, async () => "ran");
      expect(await call()).toEqual({ response: "ran", replayed: false });
      expect(await call()).toEqual({ response: "ran", replayed: true });
    } finally {
      await old.destroy();
    }
  });
});
