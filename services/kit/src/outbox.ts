/**
 * The outbox: a service writes its domain events into its own `outbox` table in
 * the same transaction as the state change; the relay moves unsent rows to the
 * bus and marks them sent only after the bus accepted them (at-least-once), or,
 * on a Postgres bus in the same database, marks them and inserts them into the
 * bus table in one statement (exactly once; see OutboxRelay).
 *
 * The relay never reads "ids greater than the last one sent": ids are drawn
 * before commit and transactions commit out of order, so such a cursor would
 * skip late commits. It reads every row still unsent, in commit order (`ord`, below).
 *
 * Per-organization commit order (decision 0039, amending 0035): every outbox row gets its order number (`ord`)
 * while its transaction commits, from a deferred constraint trigger (`outbox_commit_order`) that first takes a
 * transaction-scoped advisory lock on (schema, organization) in SHARE mode, then draws the number; the lock is
 * held through the commit. Writers never wait for each other (shared locks do not conflict), so one
 * organization's commits flush together. What keeps the order is the relay's read: before a batch it reads the
 * last number drawn, then takes and at once releases each candidate organization's lock in EXCLUSIVE mode
 * (`outbox_settled`), which waits for every commit of that organization that drew a number up to then: after
 * it, each of those rows is committed or gone, and the batch takes only rows up to that number of those
 * organizations. So the relay sees an organization's rows only as a prefix of their numbers, and one that
 * committed after another that it depends on (it read what the other wrote) has the higher number. No lock is
 * ever held across a round trip to a writer; a transaction that writes events of several organizations takes
 * their shared locks, which never deadlock with each other or with the relay (which waits holding nothing).
 *
 * A batch of events (writeOutboxMany) is staged as ONE row of `outbox_stage` (an unlogged table: nothing in it
 * outlives its transaction), whose deferred trigger, at commit, takes the same locks and inserts the batch's rows
 * into the outbox with their numbers already drawn, then deletes the staged row. Each event is written once,
 * numbered as it is written, instead of written and then rewritten with its number (which cost as much again as
 * the insert for a batch of 1000). Rows inserted with their number fire no trigger of their own.
 */
import { context, ROOT_CONTEXT } from "@opentelemetry/api";
import { sql, type Kysely, type Generated, type Migration, type RawBuilder, type Transaction } from "kysely";
import { startLeaderJob, type LeaderJob, type LeaderJobOptions } from "./jobs";
import type { DomainEvent } from "@dpp/contract";
import { lockKey, migrateKitPart } from "./db";
import { DOMAIN_EVENTS_TOPIC } from "./events";
import { PgBus, type Bus } from "@dpp/bus";
import type { Logger } from "./logger";
import { activeTraceContext, publishingUntraced, startPublishSpans } from "./tracing";

export interface OutboxTable {
  id: Generated<number>;
  /** The row's place in its organization's commit order, drawn at commit (see the header). */
  ord: Generated<number | null>;
  event_id: string;
  organization_id: string;
  livemode: boolean;
  type: string;
  payload: string;
  /** W3C trace context (traceparent, tracestate) of the transaction that wrote the event; null without tracing. */
  trace_context: string | null;
  created_at: Generated<Date>;
  sent_at: Date | null;
}

export interface WithOutbox {
  outbox: OutboxTable;
}

/**
 * Creates the outbox table in the current schema as the kit now makes it, unless an outbox exists there (which
 * outboxMigrations keep up to date). The service template's `migrate` runs it (outboxMigrations, `0000_table`) for
 * a service that declares `outbox`; a service's own migration that still calls it, as services did before, does
 * nothing more.
 */
export async function createOutboxTable(db: Kysely<any>): Promise<void> {
  const { rows } = await sql<{ found: boolean }>`
    select exists (select from pg_tables where schemaname = current_schema() and tablename = 'outbox') as found`.execute(
    db,
  );
  if (rows[0]?.found) return;
  await db.schema
    .createTable("outbox")
    .addColumn("id", "bigserial", (c) => c.primaryKey())
    .addColumn("event_id", "text", (c) => c.notNull())
    .addColumn("organization_id", "text", (c) => c.notNull())
    .addColumn("livemode", "boolean", (c) => c.notNull())
    .addColumn("type", "text", (c) => c.notNull())
    .addColumn("payload", "jsonb", (c) => c.notNull())
    .addColumn("trace_context", "jsonb")
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("sent_at", "timestamptz")
    .execute();
  await addCommitOrder(db);
  await createOutboxStage(db);
}

/**
 * The order number drawn at commit (see the header), added to an outbox in the current schema: the `ord` column
 * and its sequence, the index of unsent rows by it, and the deferred trigger that draws it. Unsent rows of an
 * outbox made before take their id as their number (their ids were drawn in commit order, under the lock the
 * writers took then), and the sequence starts above every id. Idempotent.
 */
async function addCommitOrder(db: Kysely<any>): Promise<void> {
  await sql`alter table outbox add column if not exists ord bigint`.execute(db);
  await sql`create sequence if not exists outbox_ord_seq`.execute(db);
  await sql`update outbox set ord = id where ord is null and sent_at is null`.execute(db);
  await sql`select setval('outbox_ord_seq', greatest((select max(id) from outbox), (select last_value from outbox_ord_seq), 1))`.execute(
    db,
  );
  // The relay's index: committed unsent rows by their number. A row's first version (inserted, its number not
  // drawn yet) has no entry, so the insert writes none and the relay's scan never passes over such versions.
  await sql`create index if not exists outbox_relay_idx on outbox (ord) where sent_at is null and ord is not null`.execute(
    db,
  );
  await sql`drop index if exists outbox_unsent_ord_idx`.execute(db);
  await sql`drop index if exists outbox_unsent_idx`.execute(db);
  await createCommitOrderFunctions(db);
}

/**
 * The commit-order trigger's function and the relay's barrier (see the header), in the current schema, which they
 * name (no search_path lookup when they run). The trigger's lock key is 'outbox-commit:<schema>:<organization>'
 * in share mode. `outbox_settled(timeout_ms, batch)` answers the last number drawn and the organizations, among
 * the first `batch` unsent rows up to it, whose commits that drew a number up to it have all ended; an
 * organization whose lock it could not take within the timeout (a commit still running its deferred work) is
 * left out of this batch. The sequence must keep CACHE 1 (its default): a value a backend cached could be drawn
 * after a higher one was read as the last. Idempotent (create or replace).
 */
async function createCommitOrderFunctions(db: Kysely<any>): Promise<void> {
  await sql`
    do $do$ begin execute format($f$
      create or replace function %1$I.outbox_commit_order() returns trigger language plpgsql as $body$
      begin
        perform pg_advisory_xact_lock_shared(hashtextextended('outbox-commit:' || %2$L || ':' || new.organization_id, 0));
        update %1$I.outbox set ord = nextval(%3$L) where id = new.id;
        return null;
      end $body$;
      create or replace function %1$I.outbox_settled(p_timeout_ms int, p_batch int)
      returns table (settled_ord bigint, organizations text[]) language plpgsql as $body$
      declare
        h bigint;
        k bigint;
        org text;
        orgs text[] := '{}';
      begin
        select case when s.is_called then s.last_value else s.last_value - 1 end into h from %1$I.outbox_ord_seq s;
        for org in
          select distinct c.organization_id from (
            select o.organization_id from %1$I.outbox o
            where o.sent_at is null and o.ord is not null and o.ord <= h
            order by o.ord limit p_batch) c
        loop
          k := hashtextextended('outbox-commit:' || %2$L || ':' || org, 0);
          -- The lock is transaction-scoped and taken in a block that always ends by rolling back, which releases
          -- it and undoes the timeout's setting: by the raise below once it is held, or by the lock timeout. A
          -- session lock would outlive a timeout that fires as the lock is granted (the error then comes after the
          -- grant), and every later commit of the organization would wait for it.
          begin
            perform set_config('lock_timeout', p_timeout_ms || 'ms', true);
            perform pg_advisory_xact_lock(k);
            raise exception using errcode = 'KS001';
          exception
            when sqlstate 'KS001' then
              orgs := orgs || org;
            when lock_not_available then
              null;
          end;
        end loop;
        return query select h, orgs;
      end $body$$f$, current_schema(), current_schema(), current_schema() || '.outbox_ord_seq');
    end $do$`.execute(db);
  // Rows inserted with their number (a staged batch's, see createOutboxStage) have none to draw.
  await sql`drop trigger if exists outbox_commit_order on outbox`.execute(db);
  await sql`
    create constraint trigger outbox_commit_order after insert on outbox
    deferrable initially deferred for each row when (new.ord is null) execute function outbox_commit_order()`.execute(
    db,
  );
}

/**
 * The stage of batches (see the header), in the current schema: `outbox_stage` holds a batch's events as one
 * jsonb array (stored out of line, uncompressed: it lives for one transaction) and the organizations they belong
 * to, until its transaction commits; its deferred trigger then takes each organization's commit lock in share
 * mode, as the outbox's own trigger does for one row, inserts the events into the outbox in their order with their
 * numbers drawn there, and deletes the staged row. Unlogged: no WAL is written for a row that never outlives its
 * transaction. Idempotent.
 */
async function createOutboxStage(db: Kysely<any>): Promise<void> {
  await sql`
    create unlogged table if not exists outbox_stage (
      id bigserial primary key,
      events jsonb not null,
      trace_context jsonb
    )`.execute(db);
  await sql`alter table outbox_stage add column if not exists organizations text[]`.execute(db);
  await sql`alter table outbox_stage alter column events set storage external`.execute(db);
  await sql`
    do $do$ begin execute format($f$
      create or replace function %1$I.outbox_stage_commit() returns trigger language plpgsql as $body$
      declare
        org text;
      begin
        -- The batch's organizations as its writer named them; a row staged without them (by a writer older than
        -- the column) has them read from its events.
        for org in select unnest(coalesce(new.organizations,
            array(select distinct e->>'organization_id' from jsonb_array_elements(new.events) e))) loop
          perform pg_advisory_xact_lock_shared(hashtextextended('outbox-commit:' || %2$L || ':' || org, 0));
        end loop;
        -- In the batch's order: ids and numbers are drawn as the ordered rows are inserted.
        insert into %1$I.outbox (event_id, organization_id, livemode, type, payload, trace_context, ord)
        select b.e->>'id', b.e->>'organization_id', (b.e->>'livemode')::boolean, b.e->>'type', b.e,
               new.trace_context, nextval(%3$L)
        from (select x.e from jsonb_array_elements(new.events) with ordinality as x(e, n) order by x.n) b;
        delete from %1$I.outbox_stage where id = new.id;
        return null;
      end $body$$f$, current_schema(), current_schema(), current_schema() || '.outbox_ord_seq');
    end $do$`.execute(db);
  await sql`drop trigger if exists outbox_stage_commit on outbox_stage`.execute(db);
  await sql`
    create constraint trigger outbox_stage_commit after insert on outbox_stage
    deferrable initially deferred for each row execute function outbox_stage_commit()`.execute(db);
}

/**
 * The kit's outbox, applied by the service template's `migrate` to every service that declares `outbox`, with
 * their own migration table (kit_outbox_migration) so that they never interleave with the service's migrations,
 * and before them. `0000_table` creates the outbox where none exists yet (a new service); where a service's
 * migration made it (services did, before the kit made it), it leaves it to the changes after it, each a no-op on
 * a table that createOutboxTable made with the change already in it. Sorted by name, so `0000_table` runs first in
 * a new database; in one migrated before it existed it runs at the next `migrate`, and finds the table
 * (migrateKitPart allows that order).
 */
export const outboxMigrations: Record<string, Migration> = {
  "0000_table": { up: createOutboxTable },
  "0001_trace_context": {
    async up(db) {
      await sql`alter table outbox add column if not exists trace_context jsonb`.execute(db);
    },
  },
  "0002_commit_order": { up: addCommitOrder },
  "0003_shared_commit_lock": { up: createCommitOrderFunctions },
  "0004_barrier_lock_released_by_rollback": { up: createCommitOrderFunctions },
  "0005_staged_batches": {
    async up(db) {
      await createCommitOrderFunctions(db);
      await createOutboxStage(db);
    },
  },
  // A staged batch names its organizations (no pass over its events at commit to find them); event ids are not
  // an index of the outbox (nothing looks a row up by one: the feed is where an event id is unique).
  "0006_stage_organizations_no_event_id_index": {
    async up(db) {
      await createOutboxStage(db);
      await sql`alter table outbox drop constraint if exists outbox_event_id_key`.execute(db);
    },
  },
};

/** Applies outboxMigrations to `schema`: creates the outbox there, or brings it up to date. */
export async function migrateOutbox(url: string, schema: string): Promise<void> {
  await migrateKitPart(url, schema, "kit_outbox_migration", outboxMigrations);
}

/**
 * Records an event in the caller's transaction, with the trace context of the active span (the request that
 * causes the event), which the relay carries on to the bus. Its order number is drawn when the transaction
 * commits (see the header).
 */
export async function writeOutbox<DB extends WithOutbox>(
  trx: Transaction<DB>,
  event: DomainEvent,
): Promise<void> {
  await sql`
    insert into outbox (event_id, organization_id, livemode, type, payload, trace_context)
    values (${event.id}, ${event.organization_id}, ${event.livemode}, ${event.type},
           ${JSON.stringify(event)}::jsonb, ${traceContextColumn()}::jsonb)`.execute(trx);
}

/**
 * Records several events in the caller's transaction, in the order given, each as writeOutbox records it (one
 * trace context for all: the active span's). One statement whatever their number: the batch travels as ONE JSON
 * array, parsed once by Postgres, and is staged as one row (`outbox_stage`, see the header) that becomes the
 * outbox rows, numbered, when the transaction commits; rolled back, it leaves nothing.
 */
export async function writeOutboxMany<DB extends WithOutbox>(
  trx: Transaction<DB>,
  events: readonly DomainEvent[],
): Promise<void> {
  if (events.length === 0) return;
  if (events.length === 1) return writeOutbox(trx, events[0]!);
  const organizations = [...new Set(events.map((e) => e.organization_id))];
  await sql`
    insert into outbox_stage (events, trace_context, organizations)
    values (${JSON.stringify(events)}::jsonb, ${traceContextColumn()}::jsonb, ${organizations}::text[])`.execute(
    trx,
  );
}

/**
 * The outbox insert of an event caused by a write of the same statement, as the body of a data-modifying CTE
 * (`with written as (insert ... returning ...), event as (${outboxInsert(e, "written")}) select ... from written`):
 * the event is recorded for the row `source` yields (the CTE of the write; no row: no event), its order number
 * drawn at commit as writeOutbox's is. So a write and its event cost one statement; under singleStatement
 * (idempotency.ts), outside an idempotent call, no begin and no commit either.
 *
 * The event's created_at is the transaction's time, now(), rendered as `toISOString()` renders it (milliseconds,
 * truncated, UTC): the time a row written with `default now()` carries, which a caller building the event before
 * the write does not know yet.
 */
export function outboxInsert(event: Omit<DomainEvent, "created_at">, source: string): RawBuilder<unknown> {
  const { created_at: _, ...rest } = event as DomainEvent;
  return sql`
    insert into outbox (event_id, organization_id, livemode, type, payload, trace_context)
    select ${event.id}, ${event.organization_id}, ${event.livemode}, ${event.type},
           ${JSON.stringify(rest)}::jsonb || jsonb_build_object('created_at', ${NOW_ISO}),
           ${traceContextColumn()}::jsonb
    from ${sql.table(source)} as written`;
}

/** now() as JavaScript's `Date.prototype.toISOString()` renders a timestamp (to_char's MS truncates, as a Date does). */
const NOW_ISO = sql<string>`to_char(now() at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

function traceContextColumn(): string | null {
  const carrier = activeTraceContext();
  return carrier ? JSON.stringify(carrier) : null;
}

export interface OutboxRelayOptions {
  /** The service schema, to name the relay's lock. */
  schema: string;
  /** The topic events are published to (default DOMAIN_EVENTS_TOPIC; KAFKA_TOPIC in a service). */
  topic?: string;
  intervalMs?: number;
  /**
   * A wake (a commit that wrote events) starts a pass this much later, so that the commits of that window
   * travel in one pass (default RELAY_DEBOUNCE_MS_DEFAULT; 0: at once).
   */
  wakeDelayMs?: number;
  batchSize?: number;
  /** Sent rows are deleted after this many hours (default 168 = 7 days). */
  retentionHours?: number;
  /**
   * How long a batch waits for an organization's running commits to end before leaving that organization's rows
   * to a later pass (default SETTLE_TIMEOUT_MS_DEFAULT). New commits of that organization wait behind the relay
   * meanwhile, so it stays short: a commit normally ends within its WAL flush.
   */
  settleTimeoutMs?: number;
  /** Backoff after a failed pass: first delay (default intervalMs) and cap (default 30 s). */
  backoffMinMs?: number;
  backoffMaxMs?: number;
  /** Told how each of the relay's passes ended (LeaderJobOptions.observe: the service's metrics). */
  observe?: LeaderJobOptions["observe"];
}

/** Sent rows stay this long, for inspection and replay by hand, then are deleted. */
export const OUTBOX_RETENTION_HOURS = 168;

/**
 * The relay's default wake debounce. At 200 event-writing commits a second a pass carries about three of
 * them, and the delay it adds to an event's way to the feed stays a small part of a 100 ms budget.
 */
export const RELAY_DEBOUNCE_MS_DEFAULT = 10;

/** The relay's default wait for an organization's running commits (`settleTimeoutMs`). */
export const SETTLE_TIMEOUT_MS_DEFAULT = 20;

/**
 * What the relay may take next (see the header): unsent rows numbered up to `ord`, of `organizations` only, whose
 * commits that drew such a number have all ended.
 */
export interface SettledRows {
  ord: number;
  organizations: string[];
}

/**
 * The barrier before a relay batch (`outbox_settled`, see the header), for the first `batch` unsent rows: reads the
 * last number drawn, then waits for each of their organizations' running commits to end, at most `timeoutMs`
 * each (an organization it could not wait for is left out). Its own statement, so that the batch that follows
 * reads on a snapshot taken after every such commit ended.
 */
export async function outboxSettled(
  db: Kysely<any>,
  batch: number,
  timeoutMs = SETTLE_TIMEOUT_MS_DEFAULT,
): Promise<SettledRows> {
  const { rows } = await sql<{ settled_ord: string | number; organizations: string[] }>`
    select settled_ord, organizations from outbox_settled(${timeoutMs}::int, ${batch}::int)`.execute(db);
  const row = rows[0];
  return { ord: Number(row?.settled_ord ?? 0), organizations: row?.organizations ?? [] };
}

type PendingRow = {
  id: number;
  ord: number;
  event_id: string;
  type: string;
  organization_id: string;
  payload: unknown;
  trace_context: unknown;
};

/** What one batch of the relay did: rows sent, and unsent rows its statement saw (at most the batch size). */
interface BatchOutcome {
  sent: number;
  candidates: number;
}

/**
 * Moves unsent outbox rows to the bus. Its passes run under the job runner
 * (jobs.ts), woken after each commit that wrote events (debounced by
 * wakeDelayMs) and every intervalMs, backing off while the bus fails (rows
 * keep committing and wait in the outbox).
 *
 * One relay of a schema works at a time, across replicas: each batch takes
 * the transaction-scoped advisory lock `outbox:<schema>` (try, not wait: a
 * replica that misses it skips the pass), inside the batch's own transaction,
 * instead of the job runner's session lock, which would cost two more
 * statements, each a transaction of its own, per pass.
 *
 * A batch takes one of two ways:
 *
 * - moved: when the bus is the Postgres table in this same database (PgBus.isLocalTo) and this process does
 *   not trace (no trace context would travel with the messages, no span would be recorded), one statement
 *   takes the lock, marks the oldest unsent rows sent and inserts them into the bus table, in commit order, and
 *   wakes the subscribers at its commit. Its own transaction, no begin and no commit: the rows are sent and
 *   on the bus, or neither, whatever fails when; no row is read into this process.
 * - published: otherwise (Kafka, a bus in another database, tracing), one transaction marks the rows sent,
 *   publishes them through the bus in PRODUCER spans, and commits after the bus acknowledged them
 *   (at-least-once, see relayBatch).
 */
export class OutboxRelay {
  private job?: LeaderJob;
  private lastPrune = 0;
  /** Wakes so far, and how many of them a batch's statement, sent after them, has seen the commits of. */
  private woken = 0;
  private covered = 0;

  constructor(
    private readonly db: Kysely<any>,
    private readonly bus: Bus,
    private readonly log: Logger,
    private readonly o: OutboxRelayOptions,
  ) {}

  private get lockName(): string {
    return `outbox:${this.o.schema}`;
  }

  private get topic(): string {
    return this.o.topic ?? DOMAIN_EVENTS_TOPIC;
  }

  start(): void {
    this.job = startLeaderJob({
      name: this.lockName,
      intervalMs: this.o.intervalMs ?? 500,
      wakeDelayMs: this.o.wakeDelayMs ?? RELAY_DEBOUNCE_MS_DEFAULT,
      // Leadership is the batch transaction's own lock (see the class comment).
      lock: false,
      log: this.log,
      run: () => this.drain(),
      // A commit that woke the relay while a pass ran needs no pass of its own when a statement of that pass
      // was sent after the wake: that statement's snapshot holds the commit.
      pending: () => this.covered !== this.woken,
      backoffMinMs: this.o.backoffMinMs ?? this.o.intervalMs ?? 500,
      backoffMaxMs: this.o.backoffMaxMs ?? 30_000,
      observe: this.o.observe,
    });
  }

  /** Consecutive failed passes (0 when the last pass succeeded). */
  get consecutiveFailures(): number {
    return this.job?.consecutiveFailures ?? 0;
  }

  /**
   * Asks for a pass (called after a transaction that wrote events commits). The pass runs outside the
   * caller's trace: it relays rows of many requests, each published in a span of its own request's trace.
   */
  wake(): void {
    this.woken++;
    context.with(ROOT_CONTEXT, () => this.job?.wake());
  }

  /**
   * One pass now: relays until no unsent row is left; 0 when another relay of this schema holds the lock. Each
   * batch is two statements: the barrier (`outboxSettled`), then the batch itself on a fresh snapshot.
   *
   * A batch's statement may have a snapshot taken before the previous holder of the lock (another replica)
   * committed: the rows it sees unsent may have been sent meanwhile (the update's re-check of `sent_at is null`
   * skips them). When it saw unsent rows and sent none, the next batch looks again on a fresh snapshot; when
   * it saw none, there were none when the pass began (a row committed later wakes a pass of its own), and the
   * pass ends without another statement. It also goes on after a full batch.
   *
   * Commits that woke the relay while a pass ran ask for another pass after it (jobs.ts), which finds nothing
   * when the pass's last statement was sent after those wakes (the commits were in its snapshot): such a pass
   * is not run (`pending`). A statement that did not get the lock covers no wake.
   */
  async drain(): Promise<number> {
    const batch = this.o.batchSize ?? 200;
    const moveTo = this.bus instanceof PgBus && this.bus.isLocalTo(this.db) ? this.bus : undefined;
    let total = 0;
    let lookedAgain = false;
    for (;;) {
      const woken = this.woken;
      const settled = await outboxSettled(this.db, batch, this.o.settleTimeoutMs);
      const outcome =
        settled.organizations.length === 0
          ? { sent: 0, candidates: 0 }
          : moveTo && publishingUntraced()
            ? await this.moveBatch(moveTo, batch, settled)
            : await this.relayBatch(batch, settled);
      if (outcome === undefined) break;
      this.covered = woken;
      total += outcome.sent;
      if (outcome.candidates >= batch) continue;
      if (outcome.sent === 0 && outcome.candidates > 0 && !lookedAgain) {
        lookedAgain = true;
        continue;
      }
      break;
    }
    await this.pruneIfDue();
    return total;
  }

  /**
   * The unsent rows a batch takes, once the relay's lock is held: the oldest, at most `batch`. The lock is
   * tried in a CTE the candidates read, so no row is taken without it. Order is safe even though the
   * statement's snapshot may predate the previous holder's commit: rows it marked fail the update's own
   * `sent_at is null` re-check, and only rows the barrier settled are taken (`settled`: numbered up to its number,
   * of the organizations whose commits it waited for; see the header). The update
   * that follows takes the candidates as an array (`id = any (array(...))`): an index lookup of those ids whatever
   * the statistics, never a scan of every entry of the relay's index (which keeps the entries of rows sent since
   * the last vacuum). The candidates come from that index (outbox_relay_idx), read in order: `ord is not null`
   * is its predicate's (every committed row has its number), and the batch size as a subquery hides its value
   * from the planner, which then reads the index in order and stops instead of sorting every unsent row
   * (as the feed and the lists do, whatever the statistics).
   */
  private lockAndCandidates(batch: number, settled: SettledRows) {
    return sql`
      relay_lock as (select pg_try_advisory_xact_lock(${lockKey(this.lockName)}) as locked),
      candidate as (
        select id from outbox
        where sent_at is null and ord is not null and ord <= ${settled.ord}
          and organization_id = any (${settled.organizations}::text[]) and (select locked from relay_lock)
        order by ord limit (select ${batch}::int))`;
  }

  /**
   * One batch as one statement, on a bus table in this database (see the class comment): the rows are marked
   * sent and inserted into the bus in commit order (bus ids drawn under the topic's lock, as publish does), the
   * subscribers notified at commit. undefined: another relay holds the lock.
   */
  private async moveBatch(
    bus: PgBus,
    batch: number,
    settled: SettledRows,
  ): Promise<BatchOutcome | undefined> {
    const { rows } = await bus.published(() =>
      sql<{ locked: boolean; candidates: number; sent: number }>`
        with ${this.lockAndCandidates(batch, settled)},
        moved as (
          update outbox set sent_at = now()
          where outbox.id = any (array(select id from candidate)) and outbox.sent_at is null
          returning outbox.ord, outbox.organization_id as key, outbox.payload::text as value),
        inserted as (${bus.insertFrom(this.topic, "moved")})
        select (select locked from relay_lock) as locked,
               (select count(*)::int from candidate) as candidates,
               (select count(*)::int from inserted) as sent,
               ${bus.notifyIfAny(this.topic, "inserted")} as notified`.execute(this.db),
    );
    const row = rows[0];
    if (!row?.locked) return undefined;
    return { sent: row.sent, candidates: row.candidates };
  }

  /**
   * One batch through the bus, in one transaction: take the relay's lock, mark
   * the oldest unsent rows sent (one statement that reads them, in commit order),
   * publish them in that order, and commit only after the bus acknowledged them. A
   * failed publish rolls the marks back; a crash or a failed commit after the
   * publish re-sends the rows on a later pass, which the events service drops
   * as duplicates by event id (at-least-once). undefined: another relay holds
   * the lock.
   *
   * Holding the transaction open across the publish is acceptable here: the
   * rows it locks are ones no writer touches (writers insert new rows, and the
   * relay is the only updater), so no request waits on it; what it holds is
   * one pooled connection and the vacuum horizon, for the publish's time (a
   * few ms on the Postgres bus; on Kafka up to the producer's timeout, and
   * beyond idle_in_transaction_session_timeout the server ends the
   * transaction, which again only means a re-send). In exchange the batch is
   * one committed transaction instead of three (read, publish, mark), plus
   * the two of a session lock.
   *
   * Each event is published in its own span, a child of the trace that wrote it,
   * whose context travels in the message headers.
   */
  private async relayBatch(batch: number, settled: SettledRows): Promise<BatchOutcome | undefined> {
    const topic = this.topic;
    return this.db.transaction().execute(async (trx) => {
      const { rows } = await sql<
        (PendingRow | { [K in keyof PendingRow]: null }) & { locked: boolean; candidates: number }
      >`
        with ${this.lockAndCandidates(batch, settled)},
        marked as (
          update outbox set sent_at = now()
          where outbox.id = any (array(select id from candidate)) and outbox.sent_at is null
          returning outbox.id, outbox.ord, outbox.event_id, outbox.type, outbox.organization_id, outbox.payload,
                    outbox.trace_context)
        select (select locked from relay_lock) as locked, (select count(*)::int from candidate) as candidates, m.*
        from (values (1)) as one (n) left join marked m on true`.execute(trx);
      if (!rows[0]?.locked) return undefined;
      const candidates = rows[0].candidates;
      const pending = rows.filter(
        (r): r is PendingRow & { locked: boolean; candidates: number } => r.id !== null,
      );
      pending.sort((a, b) => a.ord - b.ord);
      if (pending.length === 0) return { sent: 0, candidates };
      const spans = startPublishSpans(
        topic,
        pending.map((r) => parseTraceContext(r.trace_context)),
        (i) => ({ "messaging.message.id": pending[i]!.event_id, "dpp.event.type": pending[i]!.type }),
      );
      try {
        await this.bus.publish(
          topic,
          pending.map((r, i) => {
            const headers = spans.headers[i];
            return {
              key: r.organization_id,
              value: typeof r.payload === "string" ? r.payload : JSON.stringify(r.payload),
              ...(headers ? { headers } : {}),
            };
          }),
        );
        spans.end();
      } catch (err) {
        spans.end(err);
        throw err;
      }
      return { sent: pending.length, candidates };
    });
  }

  private async pruneIfDue(): Promise<void> {
    if (Date.now() - this.lastPrune < 3_600_000) return;
    this.lastPrune = Date.now();
    const hours = this.o.retentionHours ?? OUTBOX_RETENTION_HOURS;
    await sql`delete from outbox where sent_at is not null and sent_at < now() - make_interval(hours => ${hours})`.execute(
      this.db,
    );
  }

  async stop(): Promise<void> {
    await this.job?.stop();
  }
}

/** The stored trace context (jsonb: an object, or its text from some drivers); null when absent or unreadable. */
function parseTraceContext(v: unknown): Record<string, string> | null {
  const o = typeof v === "string" ? safeJson(v) : v;
  if (!o || typeof o !== "object") return null;
  const carrier: Record<string, string> = {};
  for (const [k, val] of Object.entries(o)) if (typeof val === "string") carrier[k] = val;
  return carrier.traceparent ? carrier : null;
}

function safeJson(s: string): unknown {
  try {
    return JSON.parse(s);
  } catch {
    return null;
  }
}

/**
 * The outbox's unsent committed rows and the age of the oldest, in seconds (0 when none): what the metrics
 * dpp_outbox_backlog and dpp_outbox_oldest_unsent_age_seconds report, read when Prometheus scrapes. One
 * statement on the relay's index (outbox_relay_idx: committed unsent rows only).
 */
export async function outboxBacklog(db: Kysely<any>): Promise<{ backlog: number; oldestAgeSeconds: number }> {
  const { rows } = await sql<{ backlog: number; age: number | null }>`
    select count(*)::int as backlog, extract(epoch from now() - min(created_at))::float8 as age
    from outbox where sent_at is null and ord is not null`.execute(db);
  return { backlog: rows[0]?.backlog ?? 0, oldestAgeSeconds: Math.max(0, rows[0]?.age ?? 0) };
}
