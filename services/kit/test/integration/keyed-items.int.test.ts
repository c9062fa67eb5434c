/**
 * runKeyedItems against the real Postgres, on a small schema of its own: a batch's keyed items in a few
 * transactions, each item in a savepoint with the rules of runIdempotent (a recorded item replays, a refusal is
 * recorded without its writes while its neighbours commit, an unexpected error applies nothing of its
 * transaction, a key held elsewhere answers resource_busy, two batches with the same keys run each item once).
 */
import { randomBytes } from "node:crypto";
import { sql, type Kysely } from "kysely";
import { ApiError } from "@dpp/contract";
import { createDb, migrateSchema } from "../../src/db";
import { createIdempotencyTable, singleStatement, transaction } from "../../src/idempotency";
import { runKeyedItem, runKeyedItems, type KeyedItemsOptions } from "../../src/keyed-items";
import type { RequestContext, TenantContext } from "../../src/context";
import { createTestDatabase, watchStatements, type TestDatabase } from "../../src/testing";

let tdb: TestDatabase;
let db: Kysely<any>;
let other: Kysely<any>;
/** Every message the pool of `db` sends while recording. */
let recording: string[] | undefined;
let restoreQuery: () => void = () => undefined;

beforeAll(async () => {
  restoreQuery = watchStatements("imp33-items", (text) => recording?.push(text));
  tdb = await createTestDatabase("imp33_keyed_items");
  db = createDb<any>({ url: tdb.url, schema: "items", applicationName: "imp33-items", max: 4 });
  other = createDb<any>({ url: tdb.url, schema: "items", applicationName: "imp33-items-other", max: 2 });
  await migrateSchema(db, "items", {
    "0001": {
      async up(m) {
        await createIdempotencyTable(m);
        // No unique constraint: a work run twice for one key would leave two rows.
        await sql`create table item (key text not null, name text not null)`.execute(m);
      },
    },
  });
});

afterAll(async () => {
  restoreQuery();
  await db?.destroy();
  await other?.destroy();
  await tdb?.drop();
});

const METHOD = "/test.v1.Items/Create";
const encode = (s: string) => Buffer.from(s, "utf8");
const decode = (b: Uint8Array) => Buffer.from(b).toString("utf8");

function tenant(): RequestContext {
  return {
    requestId: `req_${randomBytes(4).toString("hex")}`,
    organizationId: `org_${randomBytes(4).toString("hex")}`,
    livemode: false,
  };
}

interface Item {
  key: string;
  request: unknown;
  /** What the work does after writing its row: answer, refuse, or fail. */
  then?: "refuse" | "fail" | "refuse-before-writing";
}

const items = (prefix: string, n: number): Item[] =>
  Array.from({ length: n }, (_, i) => ({ key: `${prefix}:${i}`, request: { i } }));

/** The work of an item: one row written in the item's transaction (two statements: a store transaction), then its answer. */
async function write(item: Item, ctx: TenantContext): Promise<string> {
  if (item.then === "refuse-before-writing")
    throw new ApiError("validation_failed", `refused ${item.key} before writing`);
  await transaction(db, ctx, async (trx) => {
    await trx.insertInto("item").values({ key: item.key, name: "first" }).execute();
    await trx.insertInto("item").values({ key: item.key, name: "second" }).execute();
  });
  if (item.then === "refuse") throw new ApiError("already_exists", `refused ${item.key}`, { key: item.key });
  if (item.then === "fail") throw new Error(`a bug at ${item.key}`);
  return `done ${item.key}`;
}

const options = (
  call: RequestContext,
  o: Partial<KeyedItemsOptions<string>> = {},
): KeyedItemsOptions<string> => ({
  db,
  call: { ctx: call, caller: "imports" },
  method: METHOD,
  encode,
  decode,
  openWithWork: true,
  ...o,
});

async function rowsOf(prefix: string): Promise<string[]> {
  const { rows } = await sql<{ key: string; name: string }>`
    select key, name from item where key like ${`${prefix}:%`} order by key, name`.execute(db);
  return rows.map((r) => `${r.key} ${r.name}`);
}

async function recordsOf(prefix: string): Promise<number> {
  const { rows } = await sql<{ n: number }>`
    select count(*)::int as n from idempotency where idempotency_key like ${`${prefix}:%`}`.execute(db);
  return rows[0]!.n;
}

const summary = (results: Array<{ response?: string; error?: ApiError; replayed: boolean }>) =>
  results.map((r) => `${r.error ? r.error.code : r.response}${r.replayed ? " (replayed)" : ""}`);

describe("runKeyedItems", () => {
  it("runs every item once in a few transactions, records each answer, and replays them all", async () => {
    const call = tenant();
    const prefix = `a${randomBytes(3).toString("hex")}`;
    const batch = items(prefix, 12);
    recording = [];
    const first = await runKeyedItems(options(call, { lanes: 1, perTransaction: 4 }), batch, write);
    const sent = recording;
    recording = undefined;
    expect(summary(first)).toEqual(batch.map((b) => `done ${b.key}`));
    expect(await rowsOf(prefix)).toHaveLength(24);
    expect(await recordsOf(prefix)).toBe(12);
    // 12 items, 4 to a transaction: three transactions, not twelve.
    expect(sent.filter((m) => /^begin\b/.test(m))).toHaveLength(3);
    expect(sent.filter((m) => /\bcommit$/.test(m))).toHaveLength(3);

    let ran = 0;
    const again = await runKeyedItems(options(call), batch, async (item, ctx) => {
      ran++;
      return write(item, ctx);
    });
    expect(summary(again)).toEqual(batch.map((b) => `done ${b.key} (replayed)`));
    expect(await rowsOf(prefix)).toHaveLength(24);
    // The work runs up to its first statement, whose claim finds the key recorded: nothing more is written.
    expect(ran).toBeLessThanOrEqual(12);
    // An item replays what the single path (runKeyedItem) answers for the same key, and the other way round.
    const single = await runKeyedItem(
      { ...options(call), key: batch[3]!.key, request: batch[3]!.request },
      async () => "never",
    );
    expect(single).toEqual({ response: `done ${prefix}:3`, replayed: true });
  });

  it("records a refusal without the item's writes while its neighbours in the same transaction commit, and replays it", async () => {
    const call = tenant();
    const prefix = `r${randomBytes(3).toString("hex")}`;
    const batch = items(prefix, 4);
    batch[1]!.then = "refuse";
    batch[2]!.then = "refuse-before-writing";
    const o = options(call, { lanes: 1 });
    const first = await runKeyedItems(o, batch, write);
    expect(summary(first)).toEqual([
      `done ${prefix}:0`,
      "already_exists",
      "validation_failed",
      `done ${prefix}:3`,
    ]);
    expect(first[1]!.error!.details).toEqual({ key: `${prefix}:1` });
    expect(await rowsOf(prefix)).toEqual([
      `${prefix}:0 first`,
      `${prefix}:0 second`,
      `${prefix}:3 first`,
      `${prefix}:3 second`,
    ]);
    expect(await recordsOf(prefix)).toBe(4);

    // Sent again, even with work that would now succeed: the recorded refusals answer.
    const again = await runKeyedItems(o, items(prefix, 4), write);
    expect(summary(again)).toEqual([
      `done ${prefix}:0 (replayed)`,
      "already_exists (replayed)",
      "validation_failed (replayed)",
      `done ${prefix}:3 (replayed)`,
    ]);
    expect(again[1]!.error!.message).toBe(`refused ${prefix}:1`);
    expect(await rowsOf(prefix)).toHaveLength(4);
  });

  it("an unexpected error rolls back its whole transaction and fails the call: nothing of it is applied or recorded", async () => {
    const call = tenant();
    const prefix = `f${randomBytes(3).toString("hex")}`;
    const batch = items(prefix, 5);
    batch[3]!.then = "fail";
    const committed: number[] = [];
    const o = options(call, { lanes: 1, onCommitted: () => committed.push(1) });
    await expect(runKeyedItems(o, batch, write)).rejects.toThrow(`a bug at ${prefix}:3`);
    expect(await rowsOf(prefix)).toEqual([]);
    expect(await recordsOf(prefix)).toBe(0);
    expect(committed).toEqual([]);

    // The same keys run again (nothing was recorded), and now commit.
    const again = await runKeyedItems(o, items(prefix, 5), write);
    expect(summary(again)).toEqual(items(prefix, 5).map((b) => `done ${b.key}`));
    expect(await rowsOf(prefix)).toHaveLength(10);
    expect(committed).toEqual([1]);
  });

  it("stops the other lanes when one fails: their open transactions roll back", async () => {
    const call = tenant();
    const prefix = `s${randomBytes(3).toString("hex")}`;
    const batch = items(prefix, 20);
    batch[1]!.then = "fail";
    // Two lanes, each in one transaction (perTransaction above the batch): the second lane fails at its first
    // item, and the first, still running, rolls back instead of committing.
    const o = options(call, { lanes: 2, perTransaction: 20 });
    await expect(runKeyedItems(o, batch, write)).rejects.toThrow(`a bug at ${prefix}:1`);
    expect(await rowsOf(prefix)).toEqual([]);
    expect(await recordsOf(prefix)).toBe(0);
  });

  it("runs the items of a group one after the other in their order; the work's single statements join the item's transaction", async () => {
    const call = tenant();
    const prefix = `o${randomBytes(3).toString("hex")}`;
    const batch = items(prefix, 6);
    const order: string[] = [];
    const o = options(call, { lanes: 3, order: [[5, 1, 3]] });
    const results = await runKeyedItems(o, batch, async (item, ctx) => {
      order.push(item.key);
      await singleStatement(db, ctx, (q) =>
        q.insertInto("item").values({ key: item.key, name: "only" }).execute(),
      );
      return item.key;
    });
    expect(results.map((r) => r.response)).toEqual(batch.map((b) => b.key));
    const grouped = order.filter((k) => [5, 1, 3].some((i) => k === `${prefix}:${i}`));
    expect(grouped).toEqual([`${prefix}:5`, `${prefix}:1`, `${prefix}:3`]);
    expect(await rowsOf(prefix)).toHaveLength(6);
  });

  it("a key another transaction holds answers resource_busy, unrecorded, and its neighbours commit", async () => {
    const call = tenant();
    const prefix = `b${randomBytes(3).toString("hex")}`;
    const batch = items(prefix, 3);
    // Another transaction holds the lock of item 1's key (as a call still running under it would).
    const results = await holdingTheKey(call, batch[1]!.key, () =>
      runKeyedItems(options(call, { lanes: 1 }), batch, write),
    );
    expect(summary(results)).toEqual([`done ${prefix}:0`, "resource_busy", `done ${prefix}:2`]);
    expect(results[1]!.error!.headers).toMatchObject({ "Retry-After": "1" });
    expect(await recordsOf(prefix)).toBe(2);
    const again = await runKeyedItems(options(call, { lanes: 1 }), batch, write);
    expect(summary(again)).toEqual([
      `done ${prefix}:0 (replayed)`,
      `done ${prefix}:1`,
      `done ${prefix}:2 (replayed)`,
    ]);
    expect(await rowsOf(prefix)).toHaveLength(6);
  });

  it("two batches with the same keys at once run each item once: the other batch replays it or answers busy", async () => {
    const call = tenant();
    const prefix = `c${randomBytes(3).toString("hex")}`;
    const batch = items(prefix, 40);
    // Every third item refused: its key's lock is released with its savepoint, and the refusal recorded.
    batch.forEach((b, i) => {
      if (i % 3 === 0) b.then = "refuse";
    });
    const slow = async (item: Item, ctx: TenantContext) => {
      const out = await write(item, ctx);
      await singleStatement(db, ctx, (q) => sql`select pg_sleep(0.002)`.execute(q));
      return out;
    };
    const o = options(call, { lanes: 2, perTransaction: 8 });
    const [a, b] = await Promise.all([runKeyedItems(o, batch, slow), runKeyedItems(o, batch, slow)]);
    for (const [i, item] of batch.entries()) {
      const expected = item.then === "refuse" ? "already_exists" : `done ${item.key}`;
      for (const r of [a[i]!, b[i]!]) {
        const s = summary([r])[0]!;
        expect([expected, `${expected} (replayed)`, "resource_busy"]).toContain(s);
      }
    }
    // Exactly one of the two batches answered each item first-hand.
    for (const i of batch.keys())
      expect([a[i]!, b[i]!].filter((r) => !r.replayed && r.error?.code !== "resource_busy")).toHaveLength(1);
    // Every item's work applied once (two rows) or, refused, not at all.
    const written = await rowsOf(prefix);
    const expectedRows = batch.flatMap((item) =>
      item.then === "refuse" ? [] : [`${item.key} first`, `${item.key} second`],
    );
    expect(written).toEqual(expectedRows.sort());
    // Sent once more, every item replays its one answer.
    const third = await runKeyedItems(o, batch, slow);
    expect(summary(third)).toEqual(
      batch.map((item) => `${item.then === "refuse" ? "already_exists" : `done ${item.key}`} (replayed)`),
    );
  });

  it("refuses an item whose key is empty alone, without running it", async () => {
    const call = tenant();
    const prefix = `k${randomBytes(3).toString("hex")}`;
    const batch = [{ key: "", request: {} }, ...items(prefix, 1)];
    const results = await runKeyedItems(options(call), batch, write);
    expect(summary(results)).toEqual(["validation_failed", `done ${prefix}:0`]);
  });
});

/** Runs fn while a transaction of `other` holds the lock of `key` (as a call still running under it would). */
async function holdingTheKey<T>(call: RequestContext, key: string, fn: () => Promise<T>): Promise<T> {
  return other.transaction().execute(async (trx) => {
    const { rows } = await sql<{ locked: boolean }>`
      select locked from kit_idempotency_open(${call.organizationId}, ${call.livemode}, ${"service:imports"}, ${key})`.execute(
      trx,
    );
    expect(rows[0]?.locked).toBe(true);
    return fn();
  });
}
