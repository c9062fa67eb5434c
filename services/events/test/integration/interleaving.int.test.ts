/**
 * Interleaving: 20 writers create 2,000 events for one organization through a
 * producer's outbox, each transaction pausing a random few milliseconds before
 * and after writing its event (so transactions overlap and would commit out of
 * id order without the outbox's per-organization lock). Two relays (two
 * replicas of the producer) move the rows over the Postgres-table bus to the
 * events service running in this process, while a reader follows next_cursor
 * of ListEvents every few milliseconds, as an integrator polling the feed.
 *
 * Asserted: the reader sees all 2,000 events exactly once, with sequences
 * 1..2,000 in order (a cursor never skipped an event that committed later),
 * and each writer's events in the order that writer committed them.
 */
import { randomBytes } from "node:crypto";
import type { Kysely } from "kysely";
import { domainEvent } from "@dpp/contract";
import { createLogger, createOutboxTable, writeOutbox, type WithOutbox } from "@dpp/kit";
import { OutboxRelay, createDb, migrateSchema } from "@dpp/kit/internal";
import { PgBus } from "@dpp/bus";
import type { eventsV1 } from "@dpp/proto";
import { newOrg, startHarness, type Harness, type Tenant } from "../harness";

const WRITERS = 20;
const EACH = 100;
const TOTAL = WRITERS * EACH;

const log = createLogger("events-interleaving-test", "silent");
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let h: Harness;
let producerDb: Kysely<WithOutbox>;
let bus: PgBus;
const relays: OutboxRelay[] = [];

beforeAll(async () => {
  h = await startHarness("events_interleave");
  const schema = `producer_${randomBytes(3).toString("hex")}`;
  producerDb = createDb<WithOutbox>({
    url: h.db.url,
    schema,
    applicationName: "interleave",
    max: WRITERS + 4,
  });
  await migrateSchema(producerDb, schema, { "0001_outbox": { up: (d) => createOutboxTable(d) } });
  bus = new PgBus({ url: h.db.url, log, pollIntervalMs: 20 });
  for (let i = 0; i < 2; i++) {
    const r = new OutboxRelay(producerDb, bus, log, { schema, intervalMs: 20, batchSize: 50 });
    r.start();
    relays.push(r);
  }
});

afterAll(async () => {
  await Promise.all(relays.map((r) => r.stop()));
  await bus?.close();
  await producerDb?.destroy();
  await h?.close();
});

it("a reader following next_cursor sees 2,000 events from 20 overlapping writers exactly once, in order", async () => {
  const tenant: Tenant = { organizationId: newOrg(), livemode: true };
  const byWriter: string[][] = Array.from({ length: WRITERS }, () => []);

  let writing = true;
  const writers = Promise.all(
    byWriter.map(async (mine) => {
      for (let i = 0; i < EACH; i++) {
        const e = domainEvent("passport.updated", tenant, {
          object: "passport",
          id: `pp_${randomBytes(6).toString("hex")}`,
          name: "n",
          category: "textile",
          status: "draft",
          previous_status: "draft",
          version: i + 2,
        });
        await producerDb.transaction().execute(async (trx) => {
          await sleep(Math.random() * 4);
          await writeOutbox(trx, e);
          await sleep(Math.random() * 3);
        });
        mine.push(e.id);
        relays[i % relays.length]!.wake();
      }
    }),
  ).finally(() => (writing = false));

  // The reader: every few ms, the next page from the last next_cursor.
  const seen: eventsV1.Event[] = [];
  let cursor = "";
  let polls = 0;
  const deadline = Date.now() + 100_000;
  while (writing || seen.length < TOTAL) {
    if (Date.now() > deadline) break;
    const page = await h.list(tenant, { limit: 100, cursor });
    polls++;
    seen.push(...page.events);
    expect(page.nextCursor).not.toBe("");
    cursor = page.nextCursor;
    if (!page.hasMore) await sleep(3);
  }
  await writers;

  // A last look: nothing beyond the 2,000 arrives.
  await sleep(300);
  const tail = await h.list(tenant, { limit: 100, cursor });
  seen.push(...tail.events);

  expect(polls).toBeGreaterThan(10); // the reader really read while the writers wrote
  expect(seen).toHaveLength(TOTAL);
  const ids = seen.map((e) => e.id);
  expect(new Set(ids).size).toBe(TOTAL);
  expect(new Set(ids)).toEqual(new Set(byWriter.flat()));
  expect(await h.sequences(seen)).toEqual(Array.from({ length: TOTAL }, (_, i) => i + 1));
  const position = new Map(ids.map((id, i) => [id, i]));
  for (const mine of byWriter) {
    const at = mine.map((id) => position.get(id)!);
    expect(at).toEqual([...at].sort((a, b) => a - b));
  }
}, 150_000);
