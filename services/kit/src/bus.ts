/**
 * The bus interface every producer and consumer uses, and its Postgres-table
 * transport (the one-machine default). A Kafka adapter implements the same
 * interface; nothing outside this folder knows which one runs.
 *
 * Guarantees of every adapter: at-least-once delivery; messages with the same
 * key are delivered in publish (commit) order; a consumer group's position only
 * advances after its handler returned.
 */
import pg from "pg";
import { sql, type Kysely, type Generated, type Migration } from "kysely";
import { createDb, lockKey, migrateDatabase } from "./db";
import type { Logger } from "./logger";
import { startLeaderJob, type LeaderJob } from "./jobs";

export interface BusMessage {
  key: string;
  value: string;
  headers?: Record<string, string>;
}

export interface Subscription {
  stop(): Promise<void>;
}

export interface SubscribeOptions {
  group: string;
  topic: string;
  /** Handles a batch in order; throwing makes the whole batch be redelivered. */
  handler: (messages: BusMessage[]) => Promise<void>;
}

export interface Bus {
  publish(topic: string, messages: BusMessage[]): Promise<void>;
  subscribe(options: SubscribeOptions): Promise<Subscription>;
  close(): Promise<void>;
}

// ---- Postgres-table transport ------------------------------------------------

export const BUS_SCHEMA = "bus";

interface BusDB {
  message: {
    id: Generated<number>;
    topic: string;
    key: string;
    value: string;
    headers: string;
    created_at: Generated<Date>;
  };
  consumer_offset: { group_id: string; topic: string; position: number };
}

export const busMigrations: Record<string, Migration> = {
  "0001_bus": {
    async up(db) {
      await db.schema
        .createTable("message")
        .addColumn("id", "bigserial", (c) => c.primaryKey())
        .addColumn("topic", "text", (c) => c.notNull())
        .addColumn("key", "text", (c) => c.notNull())
        .addColumn("value", "text", (c) => c.notNull())
        .addColumn("headers", "jsonb", (c) => c.notNull().defaultTo(sql`'{}'::jsonb`))
        .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
        .execute();
      await db.schema.createIndex("message_topic_id_idx").on("message").columns(["topic", "id"]).execute();
      await db.schema
        .createTable("consumer_offset")
        .addColumn("group_id", "text", (c) => c.notNull())
        .addColumn("topic", "text", (c) => c.notNull())
        .addColumn("position", "bigint", (c) => c.notNull().defaultTo(0))
        .addPrimaryKeyConstraint("consumer_offset_pk", ["group_id", "topic"])
        .execute();
    },
  },
};

export async function migrateBus(url: string): Promise<void> {
  await migrateDatabase(url, BUS_SCHEMA, busMigrations);
}

const NOTIFY_CHANNEL = "dpp_bus";

export interface PgBusOptions {
  url: string;
  log: Logger;
  pollIntervalMs?: number;
  batchSize?: number;
  /** Published messages older than this and read by every group are deleted. */
  retentionHours?: number;
}

/**
 * Messages live in bus.message. Publishing takes a per-topic transaction lock
 * before the ids are drawn, so ids are assigned in commit order and a reader
 * that resumes "after id N" can never skip a message that commits later.
 */
export class PgBus implements Bus {
  private readonly db: Kysely<BusDB>;
  private readonly subs = new Set<PgSubscription>();

  constructor(private readonly o: PgBusOptions) {
    this.db = createDb<BusDB>({ url: o.url, schema: BUS_SCHEMA, applicationName: "bus", max: 4, log: o.log });
  }

  async publish(topic: string, messages: BusMessage[]): Promise<void> {
    if (messages.length === 0) return;
    await this.db.transaction().execute(async (trx) => {
      await sql`select pg_advisory_xact_lock(${lockKey(`bus:${topic}`)})`.execute(trx);
      await trx
        .insertInto("message")
        .values(
          messages.map((m) => ({
            topic,
            key: m.key,
            value: m.value,
            headers: JSON.stringify(m.headers ?? {}),
          })),
        )
        .execute();
      await sql`select pg_notify(${NOTIFY_CHANNEL}, ${topic})`.execute(trx);
    });
  }

  async subscribe(options: SubscribeOptions): Promise<Subscription> {
    const sub = new PgSubscription(this.db, this.o, options);
    this.subs.add(sub);
    await sub.start();
    return {
      stop: async () => {
        this.subs.delete(sub);
        await sub.stop();
      },
    };
  }

  /** Deletes messages every group has read and that are older than the retention. */
  async prune(): Promise<number> {
    const hours = this.o.retentionHours ?? 72;
    const res = await sql<{ n: number }>`
      with done as (
        delete from message m
        where m.created_at < now() - make_interval(hours => ${hours})
          and m.id <= coalesce((select min(o.position) from consumer_offset o where o.topic = m.topic), 0)
        returning 1)
      select count(*)::int as n from done`.execute(this.db);
    return res.rows[0]?.n ?? 0;
  }

  async close(): Promise<void> {
    await Promise.all([...this.subs].map((s) => s.stop()));
    this.subs.clear();
    await this.db.destroy();
  }
}

class PgSubscription {
  private listener?: pg.Client;
  private job?: LeaderJob;
  private stopped = false;

  constructor(
    private readonly db: Kysely<BusDB>,
    private readonly o: PgBusOptions,
    private readonly s: SubscribeOptions,
  ) {}

  async start(): Promise<void> {
    const listener = new pg.Client({
      connectionString: this.o.url,
      application_name: `bus-listen-${this.s.group}`,
    });
    listener.on("error", (err: Error) =>
      this.o.log.warn({ err: { message: err.message } }, "bus listener error; polling continues"),
    );
    listener.on("notification", (n) => {
      if (n.payload === this.s.topic) this.job?.wake();
    });
    await listener.connect();
    await listener.query(`listen ${NOTIFY_CHANNEL}`);
    this.listener = listener;
    // Polling is a leader job: one consumer of a group reads at a time (the others skip the pass),
    // woken by NOTIFY and every poll interval, backing off while the handler fails.
    this.job = startLeaderJob({
      name: `bus:${this.s.group}:${this.s.topic}`,
      intervalMs: this.o.pollIntervalMs ?? 250,
      lock: this.db,
      log: this.o.log.child({ group: this.s.group }),
      run: () => this.drain(),
      backoffMaxMs: 5_000,
    });
  }

  private async drain(): Promise<number> {
    const batch = this.o.batchSize ?? 200;
    let total = 0;
    for (;;) {
      if (this.stopped) return total;
      const n = await this.pollOnce(batch);
      total += n;
      if (n < batch) return total;
    }
  }

  /** Reads the next batch after the group's position, handles it, then advances the position. */
  private async pollOnce(batch: number): Promise<number> {
    const { group, topic } = this.s;
    return this.db.transaction().execute(async (trx) => {
      await trx
        .insertInto("consumer_offset")
        .values({ group_id: group, topic, position: 0 })
        .onConflict((oc) => oc.columns(["group_id", "topic"]).doNothing())
        .execute();
      // The row lock makes one consumer of a group work at a time.
      const { position } = await trx
        .selectFrom("consumer_offset")
        .select("position")
        .where("group_id", "=", group)
        .where("topic", "=", topic)
        .forUpdate()
        .executeTakeFirstOrThrow();
      const rows = await trx
        .selectFrom("message")
        .select(["id", "key", "value", "headers"])
        .where("topic", "=", topic)
        .where("id", ">", position)
        .orderBy("id")
        .limit(batch)
        .execute();
      if (rows.length === 0) return 0;
      await this.s.handler(
        rows.map((r) => ({
          key: r.key,
          value: r.value,
          headers: (typeof r.headers === "string" ? JSON.parse(r.headers) : r.headers) as Record<
            string,
            string
          >,
        })),
      );
      await trx
        .updateTable("consumer_offset")
        .set({ position: rows[rows.length - 1]!.id })
        .where("group_id", "=", group)
        .where("topic", "=", topic)
        .execute();
      return rows.length;
    });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.job?.stop();
    await this.listener?.end().catch(() => undefined);
  }
}
