/**
 * The outbox: a service writes its domain events into its own `outbox` table in
 * the same transaction as the state change; the relay moves unsent rows to the
 * bus and marks them sent only after the bus accepted them (at-least-once).
 *
 * The relay never reads "ids greater than the last one sent": ids are drawn
 * before commit and transactions commit out of order, so such a cursor would
 * skip late commits. It reads every row still unsent, oldest id first.
 */
import { sql, type Kysely, type Generated, type Transaction } from "kysely";
import { lockKey } from "./db";
import { DOMAIN_EVENTS_TOPIC, type DomainEvent } from "./events";
import type { Bus } from "./bus";
import type { Logger } from "./logger";

export interface OutboxTable {
  id: Generated<number>;
  event_id: string;
  organization_id: string;
  livemode: boolean;
  type: string;
  payload: string;
  created_at: Generated<Date>;
  sent_at: Date | null;
}

export interface WithOutbox {
  outbox: OutboxTable;
}

/** Creates the outbox table; called from each service's first migration. */
export async function createOutboxTable(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable("outbox")
    .addColumn("id", "bigserial", (c) => c.primaryKey())
    .addColumn("event_id", "text", (c) => c.notNull().unique())
    .addColumn("organization_id", "text", (c) => c.notNull())
    .addColumn("livemode", "boolean", (c) => c.notNull())
    .addColumn("type", "text", (c) => c.notNull())
    .addColumn("payload", "jsonb", (c) => c.notNull())
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("sent_at", "timestamptz")
    .execute();
  await sql`create index outbox_unsent_idx on outbox (id) where sent_at is null`.execute(db);
}

/** Records an event in the caller's transaction. */
export async function writeOutbox<DB extends WithOutbox>(
  trx: Transaction<DB>,
  event: DomainEvent,
): Promise<void> {
  const t = trx as unknown as Transaction<WithOutbox>;
  await t
    .insertInto("outbox")
    .values({
      event_id: event.id,
      organization_id: event.organization_id,
      livemode: event.livemode,
      type: event.type,
      payload: JSON.stringify(event),
      sent_at: null,
    })
    .execute();
}

export interface OutboxRelayOptions {
  /** The service schema, to name the relay's lock. */
  schema: string;
  intervalMs?: number;
  batchSize?: number;
  /** Sent rows are deleted after this many hours. */
  retentionHours?: number;
}

export class OutboxRelay {
  private timer?: NodeJS.Timeout;
  private running?: Promise<void>;
  private again = false;
  private stopped = false;
  private lastPrune = 0;
  private failures = 0;

  constructor(
    private readonly db: Kysely<any>,
    private readonly bus: Bus,
    private readonly log: Logger,
    private readonly o: OutboxRelayOptions,
  ) {}

  start(): void {
    this.timer = setInterval(() => this.wake(), this.o.intervalMs ?? 500);
    this.wake();
  }

  /** Asks for a pass now (called after a transaction that wrote events commits). */
  wake(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.drain()
      .then(() => {
        this.failures = 0;
      })
      .catch((err: unknown) => {
        this.failures++;
        this.log.error(
          { err, failures: this.failures },
          "outbox relay pass failed; rows stay unsent and are retried",
        );
      })
      .finally(() => {
        this.running = undefined;
        if (this.again) {
          this.again = false;
          this.wake();
        }
      });
  }

  /** Relays until no unsent row is left; returns how many rows were sent. */
  async drain(): Promise<number> {
    let total = 0;
    for (;;) {
      const n = await this.relayOnce();
      total += n;
      if (n < (this.o.batchSize ?? 200)) break;
    }
    await this.pruneIfDue();
    return total;
  }

  private async relayOnce(): Promise<number> {
    const batch = this.o.batchSize ?? 200;
    return this.db.transaction().execute(async (trx) => {
      // One relay pass per schema at a time, so replicas never interleave a batch.
      const { rows } = await sql<{ ok: boolean }>`select pg_try_advisory_xact_lock(${lockKey(
        `outbox:${this.o.schema}`,
      )}) as ok`.execute(trx);
      if (!rows[0]?.ok) return 0;
      const pending = await trx
        .selectFrom("outbox")
        .select(["id", "organization_id", "payload"])
        .where("sent_at", "is", null)
        .orderBy("id")
        .limit(batch)
        .execute();
      if (pending.length === 0) return 0;
      await this.bus.publish(
        DOMAIN_EVENTS_TOPIC,
        pending.map((r: { organization_id: string; payload: unknown }) => ({
          key: r.organization_id,
          value: typeof r.payload === "string" ? r.payload : JSON.stringify(r.payload),
        })),
      );
      await trx
        .updateTable("outbox")
        .set({ sent_at: sql`now()` })
        .where(
          "id",
          "in",
          pending.map((r: { id: number }) => r.id),
        )
        .execute();
      return pending.length;
    });
  }

  private async pruneIfDue(): Promise<void> {
    if (Date.now() - this.lastPrune < 3_600_000) return;
    this.lastPrune = Date.now();
    const hours = this.o.retentionHours ?? 168;
    await sql`delete from outbox where sent_at is not null and sent_at < now() - make_interval(hours => ${hours})`.execute(
      this.db,
    );
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    await this.running;
  }
}
