/**
 * The feed's queries. Appending takes the (organization, mode) counter row lock
 * in the same transaction as the insert, so sequence order is commit order: a
 * reader that has seen sequence N can never later find a committed N' < N.
 */
import { sql, type Kysely } from "kysely";
import type { DomainEvent } from "@dpp/contract";
import type { TenantContext } from "@dpp/kit";
import type { EventsDB } from "./schema";

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

export interface FeedPage {
  events: FeedEvent[];
  /** A further matching event exists now. */
  hasMore: boolean;
}

/** Thrown inside the append transaction to roll back the counter increment of a duplicate. */
class DuplicateEvent extends Error {}

export class EventsRepository {
  constructor(private readonly db: Kysely<EventsDB>) {}

  /**
   * Appends one event to its (organization, mode) feed, or drops it when its id
   * is already known. A duplicate never consumes a sequence number.
   */
  async append(event: DomainEvent): Promise<AppendResult> {
    // Cheap path for redeliveries: no counter lock when the id is already stored.
    const known = await this.db
      .selectFrom("event")
      .select("event_id")
      .where("event_id", "=", event.id)
      .executeTakeFirst();
    if (known) return { status: "duplicate" };
    try {
      return await this.db.transaction().execute(async (trx) => {
        // The row lock serialises appends per (organization, mode) until commit.
        const { last_sequence: sequence } = await trx
          .insertInto("feed_counter")
          .values({ organization_id: event.organization_id, livemode: event.livemode, last_sequence: 1 })
          .onConflict((oc) =>
            oc
              .columns(["organization_id", "livemode"])
              .doUpdateSet((eb) => ({ last_sequence: eb("feed_counter.last_sequence", "+", 1) })),
          )
          .returning("last_sequence")
          .executeTakeFirstOrThrow();
        const inserted = await trx
          .insertInto("event")
          .values({
            organization_id: event.organization_id,
            livemode: event.livemode,
            sequence,
            event_id: event.id,
            type: event.type,
            created_at: event.created_at,
            related: JSON.stringify(event.related),
          })
          .onConflict((oc) => oc.column("event_id").doNothing())
          .returning("sequence")
          .executeTakeFirst();
        // A concurrent delivery stored the same id first: undo the increment.
        if (!inserted) throw new DuplicateEvent();
        return { status: "appended", sequence } as const;
      });
    } catch (err) {
      if (err instanceof DuplicateEvent) return { status: "duplicate" };
      throw err;
    }
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

  /** One page of a tenant's feed, oldest first. */
  async list(tenant: TenantContext, q: FeedQuery): Promise<FeedPage> {
    let query = this.db
      .selectFrom("event")
      .select(["event_id", "organization_id", "livemode", "type", "created_at", "related", "sequence"])
      .where("organization_id", "=", tenant.organizationId)
      .where("livemode", "=", tenant.livemode)
      .where("sequence", ">", q.after);
    if (q.types.length > 0) query = query.where("type", "in", [...q.types]);
    const rows = await query
      .orderBy("sequence", "asc")
      .limit(q.limit + 1)
      .execute();
    return {
      events: rows.slice(0, q.limit).map((r) => ({
        id: r.event_id,
        organizationId: r.organization_id,
        livemode: r.livemode,
        type: r.type,
        createdAt: r.created_at,
        related: r.related,
        sequence: r.sequence,
      })),
      hasMore: rows.length > q.limit,
    };
  }
}
