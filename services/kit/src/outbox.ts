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
import { context, ROOT_CONTEXT } from "@opentelemetry/api";
import { Migrator, sql, type Kysely, type Generated, type Migration, type Transaction } from "kysely";
import { startLeaderJob, withLeaderLock, type LeaderJob } from "./jobs";
import type { DomainEvent } from "@dpp/contract";
import { createDb } from "./db";
import { DOMAIN_EVENTS_TOPIC } from "./events";
import type { Bus } from "./bus";
import type { Logger } from "./logger";
import { activeTraceContext, startPublishSpans } from "./tracing";

export interface OutboxTable {
  id: Generated<number>;
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
    .addColumn("trace_context", "jsonb")
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("sent_at", "timestamptz")
    .execute();
  await sql`create index outbox_unsent_idx on outbox (id) where sent_at is null`.execute(db);
}

/**
 * The kit's own changes to an outbox created by an earlier createOutboxTable,
 * applied by the service template's `migrate` to every service with an outbox,
 * with their own migration table (kit_outbox_migration) so that they never
 * interleave with the service's migrations. Each is a no-op on a table that
 * createOutboxTable made with the change already in it.
 */
export const outboxMigrations: Record<string, Migration> = {
  "0001_trace_context": {
    async up(db) {
      await sql`alter table outbox add column if not exists trace_context jsonb`.execute(db);
    },
  },
};

/** Applies outboxMigrations to the outbox in `schema` (which the service's own migrations created). */
export async function migrateOutbox(url: string, schema: string): Promise<void> {
  const db = createDb<unknown>({ url, schema, applicationName: `${schema}-migrate-outbox`, max: 1 });
  try {
    const migrator = new Migrator({
      db: db.withSchema(schema),
      provider: { getMigrations: async () => outboxMigrations },
      migrationTableSchema: schema,
      migrationTableName: "kit_outbox_migration",
      migrationLockTableName: "kit_outbox_migration_lock",
    });
    const { error } = await migrator.migrateToLatest();
    if (error) throw error;
  } finally {
    await db.destroy();
  }
}

/** The advisory lock key that orders one organization's outbox rows in one schema. */
export function outboxOrgLock(organizationId: string) {
  return sql<number>`hashtextextended('outbox:' || current_schema() || ':' || ${organizationId}, 0)`;
}

/**
 * Records an event in the caller's transaction, after taking the
 * organization's outbox lock (held to commit: see the header), with the trace
 * context of the active span (the request that causes the event), which the
 * relay carries on to the bus.
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
      trace_context: traceContextColumn(),
      sent_at: null,
    })
    .execute();
}

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

  /**
   * Asks for a pass now (called after a transaction that wrote events commits). The pass runs outside the
   * caller's trace: it relays rows of many requests, each published in a span of its own request's trace.
   */
  wake(): void {
    context.with(ROOT_CONTEXT, () => this.job?.wake());
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
   * Each event is published in its own span, a child of the trace that wrote it,
   * whose context travels in the message headers.
   */
  private async relayBatch(): Promise<number> {
    const batch = this.o.batchSize ?? 200;
    const topic = this.o.topic ?? DOMAIN_EVENTS_TOPIC;
    const pending: Array<{
      id: number;
      event_id: string;
      type: string;
      organization_id: string;
      payload: unknown;
      trace_context: unknown;
    }> = await this.db
      .selectFrom("outbox")
      .select(["id", "event_id", "type", "organization_id", "payload", "trace_context"])
      .where("sent_at", "is", null)
      .orderBy("id")
      .limit(batch)
      .execute();
    if (pending.length === 0) return 0;
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
