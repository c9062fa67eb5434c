/**
 * The feed's queries.
 *
 * Appending takes, in the transaction that inserts, a transaction-scoped
 * advisory lock per (organization, mode) feed, held to commit, so sequence
 * order is commit order: a reader that has seen sequence N can never later find
 * a committed N' < N. A batch of events is appended in one transaction:
 *
 *   1. lock every feed of the batch, in the order of the lock keys (so two
 *      batches never wait on each other in a cycle);
 *   2. one statement, whose snapshot is taken after the locks (so it sees
 *      every event a previous holder committed): keep the events whose id is
 *      not stored yet, number them per feed from the feed's counter in batch
 *      order (row_number over those rows only), insert them (a conflicting id
 *      is skipped), and set each feed's counter once, to the last sequence
 *      inserted.
 *
 * A duplicate (an id already stored, or repeated in the batch) never consumes a
 * sequence number: the sequences of a feed have no gaps but those retention
 * leaves. Should an id conflict the first step could not foresee (the same id
 * under another feed, committed meanwhile), the statement would have numbered
 * an event it then skipped: the transaction is rolled back and the events are
 * appended one by one, where such an event is simply a duplicate.
 *
 * Each event is stored with its public JSON (`public_json`), rendered here when
 * it is appended (../domain/event-json.ts). The feed reads those texts and joins
 * them into the page's JSON array, encoded once (`listPage`), which the gateway
 * places in its answer as it is (docs/decisions/0030-feed-page-assembled-by-postgres.md,
 * 0043-feed-page-joined-from-binary-rows.md).
 * `listJson` reads them one per event and `list` reads the columns, for a
 * gateway of a previous release (docs/decisions/0026-event-json-rendered-once.md).
 *
 * The feed query reads one tenant's feed in sequence order through an index
 * that already holds that order, never a sort of the tenant's events: see
 * `pageQuery`.
 */
import { sql, type Expression, type Kysely, type Transaction } from "kysely";
import type { DomainEvent } from "@dpp/contract";
import { page, type TenantContext } from "@dpp/kit";
import { eventPublicJson } from "../domain/event-json";
import type { EventsDB, EventTable } from "./schema";

export interface FeedEvent {
  id: string;
  organizationId: string;
  livemode: boolean;
  type: string;
  createdAt: Date;
  related: Record<string, unknown>;
  sequence: number;
}

export type AppendResult = { status: "appended"; sequence: number } | { status: "duplicate" };

export interface FeedQuery {
  /** Read events with a sequence greater than this. */
  after: number;
  /** Only these types; empty = all. */
  types: readonly string[];
  limit: number;
}

/** An event of the feed as its public JSON text. */
export interface FeedEventJson {
  json: string;
  sequence: number;
}

/** A page of the feed as one JSON array, its events' texts joined by Postgres. */
export interface FeedPageJson {
  /** UTF-8: the page's events' public JSON texts in feed order as a JSON array (`[]` for an empty page). */
  json: Buffer;
  /** A further matching event exists now. */
  hasMore: boolean;
  /** The sequence of the page's last event; null for an empty page. */
  lastSequence: number | null;
}

export interface FeedPage<E = FeedEvent> {
  events: E[];
  /** A further matching event exists now. */
  hasMore: boolean;
}

/** A DomainEvent with the texts it is stored from. */
interface Appended {
  event: DomainEvent;
  related: string;
  publicJson: string;
}

const MESSAGE_COLUMNS = ["event_id", "organization_id", "livemode", "type", "created_at", "related"] as const;
const JSON_COLUMNS = ["public_json"] as const;

/** Thrown inside a batch's transaction when an insert skipped an event the statement had numbered. */
class UnforeseenConflict extends Error {}

export class EventsRepository {
  constructor(private readonly db: Kysely<EventsDB>) {}

  /** Appends one event (appendBatch of one). */
  async append(event: DomainEvent): Promise<AppendResult> {
    return (await this.appendBatch([event]))[0]!;
  }

  /**
   * Appends events to their (organization, mode) feeds in one transaction, in
   * the batch's order, dropping those whose id is already known (or repeated
   * in the batch). Each is stored with its public JSON, rendered here. Returns
   * one result per event, in order. A data exception (SQLSTATE class 22, or a
   * created_at the renderer cannot read, which carries 22007) of any event fails
   * the whole batch; the caller appends the events one by one to find it.
   *
   * In `trx`, the caller's transaction (the bus's, which advances its position
   * in it), instead of one of its own: the same two statements. An id conflict
   * the statement could not foresee is then thrown (UnforeseenConflict), since
   * only the caller can roll back what the statement wrote; so is any failure,
   * which leaves the transaction aborted.
   */
  async appendBatch(events: readonly DomainEvent[], trx?: Transaction<EventsDB>): Promise<AppendResult[]> {
    const first = new Map<string, number>();
    events.forEach((e, i) => {
      if (!first.has(e.id)) first.set(e.id, i);
    });
    const unique = events
      .filter((e, i) => first.get(e.id) === i)
      .map((event): Appended => {
        const related = JSON.stringify(event.related);
        return { event, related, publicJson: eventPublicJson(event, related) };
      });
    if (unique.length === 0) return [];
    let sequences: Map<string, number>;
    try {
      sequences = trx
        ? await insertBatch(trx, unique)
        : await this.db.transaction().execute((own) => insertBatch(own, unique));
    } catch (err) {
      if (trx) throw err;
      if (!(err instanceof UnforeseenConflict)) throw err;
      sequences = new Map();
      for (const a of unique) {
        const one = await this.db.transaction().execute((trx) => insertBatch(trx, [a]));
        for (const [id, seq] of one) sequences.set(id, seq);
      }
    }
    return events.map((e, i) => {
      const sequence = first.get(e.id) === i ? sequences.get(e.id) : undefined;
      return sequence === undefined ? { status: "duplicate" } : { status: "appended", sequence };
    });
  }

  /** The tenant feed's last sequence (0 when it has none). */
  async head(tenant: TenantContext): Promise<number> {
    const row = await this.db
      .selectFrom("feed_counter")
      .select("last_sequence")
      .where("organization_id", "=", tenant.organizationId)
      .where("livemode", "=", tenant.livemode)
      .executeTakeFirst();
    return row ? Number(row.last_sequence) : 0;
  }

  /**
   * Deletes up to `limit` events that entered the feed more than `days` days
   * ago; returns how many. Sequences are never reused (the counters stay), and
   * a cursor pointing into the deleted range reads forward from the oldest
   * event still kept.
   */
  async deleteOlderThan(days: number, limit = 5_000, db: Kysely<EventsDB> = this.db): Promise<number> {
    const res = await sql<{ n: number }>`
      with gone as (
        delete from event where ctid in (
          select ctid from event
          where received_at < now() - make_interval(days => ${days})
          limit ${limit})
        returning 1)
      select count(*)::int as n from gone`.execute(db);
    return res.rows[0]?.n ?? 0;
  }

  /**
   * The query of one page of a tenant's feed, oldest first, read in index order whatever the statistics, selecting
   * `columns` (and `sequence`): the first `rows` events of `types` (all when empty) after the sequence `after`.
   * Without a types filter: the primary key (organization_id, livemode, sequence) read in order from `after`,
   * `rows` rows. With types: for each type, event_type_idx (organization_id, livemode, type, sequence) read in
   * order, `rows` rows each, merged by sequence (a Merge Append): the rows read are bounded by the page size times
   * the number of types, never the tenant's whole feed, however rare or common the types are.
   */
  private pageQuery<C extends keyof EventTable & string>(
    tenant: TenantContext,
    types: readonly string[],
    after: number | Expression<number>,
    rows: number,
    columns: readonly C[],
  ) {
    // The page size as a subquery: the planner cannot see its value and plans to read only part of the
    // matching rows, so it reads an index in order and stops, whatever the statistics say (as the
    // passport lists do, docs/decisions/0023).
    const pageSize = sql<number>`(select ${rows}::int)`;
    const page = (type: string | undefined) => {
      let query = this.db
        .selectFrom("event")
        .select([...columns, "sequence"])
        .where("organization_id", "=", tenant.organizationId)
        .where("livemode", "=", tenant.livemode);
      if (type !== undefined) query = query.where("type", "=", type);
      return query.where("sequence", ">", after).orderBy("sequence", "asc").limit(pageSize);
    };
    const distinct = [...new Set(types)];
    if (distinct.length <= 1) return page(distinct[0]);
    // Each branch in a subquery of its own: a UNION member cannot carry ORDER BY and LIMIT unparenthesised.
    const [head, ...rest] = distinct.map((t, i) => this.db.selectFrom(page(t).as(`t${i}`)).selectAll());
    return this.db
      .selectFrom(rest.reduce((u, p) => u.unionAll(p), head!).as("page"))
      .selectAll()
      .orderBy(sql.ref("sequence"), "asc")
      .limit(pageSize);
  }

  /** The query of `list`: limit + 1 rows, the last one only telling that there is more. */
  listQuery(tenant: TenantContext, q: FeedQuery) {
    return this.pageQuery(tenant, q.types, q.after, q.limit + 1, MESSAGE_COLUMNS);
  }

  /** The query of `listJson` and `listPage`: limit + 1 rows, as `list`. */
  listJsonQuery(tenant: TenantContext, q: FeedQuery) {
    return this.pageQuery(tenant, q.types, q.after, q.limit + 1, JSON_COLUMNS);
  }

  /** One page of a tenant's feed, oldest first, read from the columns. */
  async list(tenant: TenantContext, q: FeedQuery): Promise<FeedPage> {
    const { rows, hasMore } = page(
      (await this.db.executeQuery(this.listQuery(tenant, q).compile())).rows,
      q.limit,
    );
    return {
      events: rows.map((r) => ({
        id: r.event_id,
        organizationId: r.organization_id,
        livemode: r.livemode,
        type: r.type,
        createdAt: r.created_at,
        related: r.related,
        sequence: r.sequence,
      })),
      hasMore,
    };
  }

  /** One page of a tenant's feed, oldest first, as the events' stored public JSON texts (never parsed). */
  async listJson(tenant: TenantContext, q: FeedQuery): Promise<FeedPage<FeedEventJson>> {
    const { rows, hasMore } = page(
      (await this.db.executeQuery(this.listJsonQuery(tenant, q).compile())).rows,
      q.limit,
    );
    return { events: rows.map((r) => ({ json: r.public_json, sequence: r.sequence })), hasMore };
  }

  /**
   * One page of a tenant's feed, oldest first, as the UTF-8 bytes of one JSON array of the events' stored public
   * JSON texts (never parsed): the rows of `listJsonQuery`, each encoded once into its place in the page. (Joining them in
   * Postgres, one string_agg per page, cost Postgres three times the CPU of sending the rows on the benchmark
   * machine: decision 0043.)
   */
  async listPage(tenant: TenantContext, q: FeedQuery): Promise<FeedPageJson> {
    const { rows } = await this.db.executeQuery(this.listJsonQuery(tenant, q).compile());
    const n = Math.min(rows.length, q.limit);
    // Each text is written into the page where it goes: no joined string (a page-sized value on the young heap
    // of a process that holds sixteen pages in flight).
    const sizes = new Array<number>(n);
    let size = n > 0 ? n + 1 : 2; // brackets and commas
    for (let i = 0; i < n; i++) size += sizes[i] = Buffer.byteLength(rows[i]!.public_json, "utf8");
    const json = Buffer.allocUnsafe(size);
    json[0] = 0x5b; // [
    let at = 1;
    for (let i = 0; i < n; i++) {
      if (i > 0) json[at++] = 0x2c; // ,
      at += json.write(rows[i]!.public_json, at, sizes[i], "utf8");
    }
    json[at] = 0x5d; // ]
    return { json, hasMore: rows.length > q.limit, lastSequence: n > 0 ? rows[n - 1]!.sequence : null };
  }
}

/**
 * Steps 1 and 2 of the header for one batch of distinct ids, in `trx`; the
 * sequence of each event inserted, by id.
 */
async function insertBatch(
  trx: Transaction<EventsDB>,
  appended: readonly Appended[],
): Promise<Map<string, number>> {
  const events = appended.map((a) => a.event);
  const feeds = [...new Map(events.map((e) => [`${e.livemode}:${e.organization_id}`, e])).values()];
  await sql`
    select pg_advisory_xact_lock(k.key)
    from (select distinct hashtextextended('feed:' || current_schema() || ':' || f.organization_id || ':' || f.livemode::text, 0) as key
          from unnest(${feeds.map((e) => e.organization_id)}::text[], ${feeds.map((e) => e.livemode)}::boolean[])
            as f(organization_id, livemode)) k
    order by k.key`.execute(trx);
  const { rows } = await sql<{ numbered: number; appended: Array<[string, number]> }>`
    with batch as (
      select * from unnest(
        ${events.map((e) => e.id)}::text[], ${events.map((e) => e.organization_id)}::text[],
        ${events.map((e) => e.livemode)}::boolean[], ${events.map((e) => e.type)}::text[],
        ${events.map((e) => e.created_at)}::text[], ${appended.map((a) => a.related)}::text[],
        ${appended.map((a) => a.publicJson)}::text[])
        with ordinality as b(event_id, organization_id, livemode, type, created_at, related, public_json, n)),
    fresh as (
      select b.*, row_number() over (partition by b.organization_id, b.livemode order by b.n) as rank
      from batch b
      where not exists (select 1 from event e where e.event_id = b.event_id)),
    numbered as (
      select f.*, coalesce(c.last_sequence, 0) + f.rank as sequence
      from fresh f
      left join feed_counter c on c.organization_id = f.organization_id and c.livemode = f.livemode),
    inserted as (
      insert into event (organization_id, livemode, sequence, event_id, type, created_at, related, public_json)
      select organization_id, livemode, sequence, event_id, type, created_at::timestamptz, related::jsonb, public_json
      from numbered order by n
      on conflict (event_id) do nothing
      returning organization_id, livemode, sequence, event_id),
    counted as (
      insert into feed_counter (organization_id, livemode, last_sequence)
      select organization_id, livemode, max(sequence) from inserted group by organization_id, livemode
      on conflict (organization_id, livemode) do update set last_sequence = excluded.last_sequence
      returning 1)
    -- counted runs although nothing reads it: a data-modifying WITH always runs to completion.
    select (select count(*)::int from numbered) as numbered,
           coalesce((select json_agg(json_build_array(event_id, sequence)) from inserted), '[]'::json) as appended`.execute(
    trx,
  );
  const result = rows[0]!;
  // Only a batch of several can have numbered an event after one it then skipped (a gap); one event that
  // conflicts is a duplicate, and the counter only moved for what was inserted.
  if (result.appended.length < result.numbered && events.length > 1) throw new UnforeseenConflict();
  return new Map(result.appended.map(([id, seq]) => [id, Number(seq)]));
}
