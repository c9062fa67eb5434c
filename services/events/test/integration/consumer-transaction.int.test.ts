/**
 * The consumer on the Postgres bus in the service's own database: a delivered batch is appended in the bus's
 * transaction, which also advances the group's position, so the feed and the position commit together. Counted
 * here: the statements of a consumed batch. Checked: a batch whose commit fails leaves neither, and comes again.
 */
import pg from "pg";
import { DOMAIN_EVENTS_TOPIC } from "@dpp/kit";
import { eventually, watchStatements } from "@dpp/kit/testing";
import { FEED_CONSUMER_GROUP } from "../../src/consumer/feed.consumer";
import { domainEvent, newOrg, startHarness, type Harness } from "../harness";

let h: Harness;
let admin: pg.Client;
/** The statements of the service's pool ("events"), each with the connection it went on. */
let recording: Array<[pg.Client, string]> | undefined;
let restoreQuery: () => void = () => undefined;

beforeAll(async () => {
  restoreQuery = watchStatements("events", (text, client) => recording?.push([client, text]));
  h = await startHarness("events_consumer_tx");
  admin = new pg.Client({ connectionString: h.db.url });
  await admin.connect();
});

afterAll(async () => {
  restoreQuery();
  await admin?.end();
  await h?.close();
});

function kind(text: string): string {
  const s = text.replace(/\s+/g, " ").replace(/"/g, "").trim().toLowerCase();
  if (/^(begin|commit|rollback)\b/.test(s)) return s.split(" ")[0]!;
  if (s.includes("for update skip locked") && s.includes("bus.consumer_offset")) return "read batch, advance";
  if (s.includes("pg_advisory_xact_lock") && s.includes("feed:")) return "lock feeds";
  if (s.includes("insert into event")) return "append";
  return s.slice(0, 40);
}

async function position(): Promise<number> {
  const { rows } = await admin.query<{ position: string }>(
    "select position from bus.consumer_offset where group_id = $1 and topic = $2",
    [FEED_CONSUMER_GROUP, DOMAIN_EVENTS_TOPIC],
  );
  return Number(rows[0]?.position ?? 0);
}

async function lastMessage(): Promise<number> {
  const { rows } = await admin.query<{ id: string }>(
    "select max(id) as id from bus.message where topic = $1",
    [DOMAIN_EVENTS_TOPIC],
  );
  return Number(rows[0]!.id);
}

it("appends a batch in the bus's transaction: begin, the batch read and the position advanced, the feed locks, the append, commit", async () => {
  const t = { organizationId: newOrg(), livemode: false };
  await h.publish(domainEvent(t));
  await h.waitForFeed(t, 1);
  const events = [domainEvent(t), domainEvent(t), domainEvent({ organizationId: newOrg(), livemode: true })];
  const sent: Array<[pg.Client, string]> = [];
  recording = sent;
  try {
    await h.publish(...events);
    await h.waitForFeed(t, 3);
    await eventually(async () => ((await position()) === (await lastMessage()) ? true : undefined));
  } finally {
    recording = undefined;
  }
  // Each connection's statements, as its transactions and its single statements. A pass may have begun just
  // before the recording (the poll): its begin is then missing. Besides the pass that appends there are only
  // passes that found nothing (the poll) and the feed reads of waitForFeed; the retention job is hourly here.
  const passes: string[][] = [];
  for (const client of new Set(sent.map(([c]) => c))) {
    let inTransaction: boolean | undefined;
    let open: string[] = [];
    for (const [c, text] of sent) {
      if (c !== client) continue;
      const k = kind(text);
      if (k === "begin") {
        if (open.length > 0) passes.push(open);
        open = [k];
        inTransaction = true;
      } else if (k === "commit" || k === "rollback") {
        passes.push(open[0] === "begin" ? [...open, k] : ["begin", ...open, k]);
        open = [];
        inTransaction = false;
      } else if (inTransaction === false) passes.push([k]);
      else open.push(k);
    }
    if (open.length > 0) passes.push(open);
  }
  // The one transaction that appended: nothing else in it, and no other append anywhere.
  const appending = passes.filter((p) => p.includes("append"));
  expect(appending).toEqual([["begin", "read batch, advance", "lock feeds", "append", "commit"]]);
});

it("leaves neither the feed's rows nor the position when the batch's commit fails, and appends the batch once after", async () => {
  // The first commit of a transaction that appended an event of this organization fails (a deferred check:
  // nextval is not rolled back, so it fails once).
  const t = { organizationId: newOrg(), livemode: false };
  await admin.query(`
    create sequence events.commit_failures;
    create function events.fail_first_commit() returns trigger language plpgsql as $$
    begin
      if new.organization_id = '${t.organizationId}' and nextval('events.commit_failures') = 1 then
        raise exception 'commit refused once';
      end if;
      return null;
    end $$;
    create constraint trigger fail_first_commit after insert on events.event
      deferrable initially deferred for each row execute function events.fail_first_commit();`);
  const before = await position();
  const events = [domainEvent(t), domainEvent(t), domainEvent(t)];
  await h.publish(...events);
  const feed = await h.waitForFeed(t, 3);
  await eventually(async () => ((await position()) === (await lastMessage()) ? true : undefined));
  expect(feed.map((e) => e.id)).toEqual(events.map((e) => e.id));
  expect(await h.sequences(feed)).toEqual([1, 2, 3]);
  expect(await position()).toBeGreaterThan(before);
  const { rows } = await admin.query<{ n: string }>("select last_value as n from events.commit_failures");
  expect(Number(rows[0]!.n)).toBeGreaterThan(1); // the refused commit happened, and a later one went through
  await admin.query("drop trigger fail_first_commit on events.event");
});
