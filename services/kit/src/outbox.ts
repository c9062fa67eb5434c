/**
 * The outbox: a service writes its domain events into its own `outbox` table in
 * the same transaction as the state change; the relay moves unsent rows to the
 * bus and marks them sent only after the bus accepted them (at-least-once).
 *
 * The relay never reads "ids greater than the last one sent": ids are drawn
 * before commit and transactions commit out of order, so such a cursor would
 * skip late commits. It reads every row still unsent, oldest id first.
 *
 * Per-organization commit order: writeOutbox takes a transaction-scoped
 * advisory lock on (schema, organization) before it draws the row's id, and
 * holds it to commit. So one organization's outbox ids are in the order its
 * transactions committed, and when the relay sees a row of an organization, it
 * also sees every earlier row of that organization. Cost: one organization's
 * event-writing transactions are serialised from their writeOutbox call to
 * their commit (write the outbox last in the transaction to keep that short);
 * different organizations never wait on each other (a hash collision only adds
 * waiting). A transaction that writes events of two organizations takes both
 * locks; Postgres breaks a resulting deadlock by aborting one transaction.
 */
import { sql, type Kysely, type Generated, type Transaction } from "kysely";
import { startLeaderJob, withLeaderLock, type LeaderJob } from "./jobs";
import type { DomainEvent } from "@dpp/contract";
import { DOMAIN_EVENTS_TOPIC } from "./events";
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

/** The advisory lock key that orders one organization's outbox rows in one schema. */
export function outboxOrgLock(organizationId: string) {
  return sql<number>`hashtextextended('outbox:' || current_schema() || ':' || ${organizationId}, 0)`;
}

/**
 * Records an event in the caller's transaction, after taking the
 * organization's outbox lock (held to commit: see the header).
 */
export async function writeOutbox<DB extends WithOutbox>(
  trx: Transaction<DB>,
  event: DomainEvent,
): Promise<void> {
  const t = trx as unknown as Transaction<WithOutbox>;
  await sql`select pg_advisory_xact_lock(${outboxOrgLock(event.organization_id)})`.execute(t);
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
  /** Sent rows are deleted after this many hours (default 168 = 7 days). */
  retentionHours?: number;
  /** Backoff after a failed pass: first delay (default intervalMs) and cap (default 30 s). */
  backoffMinMs?: number;
  backoffMaxMs?: number;
}

/** Sent rows stay this long, for inspection and replay by hand, then are deleted. */
export const OUTBOX_RETENTION_HOURS = 168;

/**
 * Moves unsent outbox rows to the bus. Its passes are a leader job (jobs.ts) named
 * `outbox:<schema>`: one pass at a time across replicas, woken after each commit
 * that wrote events and every intervalMs, backing off while the bus fails (rows
 * keep committing and wait in the outbox).
 */
export class OutboxRelay {
  private job?: LeaderJob;
  private lastPrune = 0;

  constructor(
    private readonly db: Kysely<any>,
    private readonly bus: Bus,
    private readonly log: Logger,
    private readonly o: OutboxRelayOptions,
  ) {}

  private get lockName(): string {
    return `outbox:${this.o.schema}`;
  }

  start(): void {
    this.job = startLeaderJob({
      name: this.lockName,
      intervalMs: this.o.intervalMs ?? 500,
      lock: this.db,
      log: this.log,
      run: () => this.drainLocked(),
      backoffMinMs: this.o.backoffMinMs ?? this.o.intervalMs ?? 500,
      backoffMaxMs: this.o.backoffMaxMs ?? 30_000,
    });
  }

  /** Consecutive failed passes (0 when the last pass succeeded). */
  get consecutiveFailures(): number {
    return this.job?.consecutiveFailures ?? 0;
  }

  /** Asks for a pass now (called after a transaction that wrote events commits). */
  wake(): void {
    this.job?.wake();
  }

  /** One pass now: relays until no unsent row is left; 0 when another relay of this schema holds the lock. */
  async drain(): Promise<number> {
    return (await withLeaderLock(this.db, this.lockName, () => this.drainLocked())) ?? 0;
  }

  private async drainLocked(): Promise<number> {
    let total = 0;
    for (;;) {
      const n = await this.relayBatch();
      total += n;
      if (n < (this.o.batchSize ?? 200)) break;
    }
    await this.pruneIfDue();
    return total;
  }

  /**
   * One batch, under the relay's lock: read the oldest unsent rows, publish them
   * in id order, and only after the bus acknowledged mark them sent. No
   * transaction is held open while publishing. A crash between publish and mark
   * re-sends the rows: the events service drops them as duplicates by event id.
   */
  private async relayBatch(): Promise<number> {
    const batch = this.o.batchSize ?? 200;
    const pending = await this.db
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
    await this.db
      .updateTable("outbox")
      .set({ sent_at: sql`now()` })
      .where(
        "id",
        "in",
        pending.map((r: { id: number }) => r.id),
      )
      .execute();
    return pending.length;
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
