/**
 * The bus interface every producer and consumer uses, and its Postgres-table
 * transport (the one-machine default). A Kafka adapter implements the same
 * interface; nothing outside this package knows which one runs.
 *
 * Guarantees of every adapter: at-least-once delivery; messages with the same
 * key are delivered in publish (commit) order; a consumer group's position only
 * advances after its handler returned.
 */
import pg from "pg";
import { metrics, type ObservableCallback, type ObservableGauge } from "@opentelemetry/api";
import { sql, type Kysely, type Generated, type Migration, type RawBuilder, type Transaction } from "kysely";
import {
  backoffMs,
  createDb,
  lockKey,
  migrateDatabase,
  startLeaderJob,
  type LeaderJob,
  type Logger,
} from "@dpp/kit/base";

export interface BusMessage {
  key: string;
  value: string;
  headers?: Record<string, string>;
}

export interface Subscription {
  /** Where the subscription stands (it joins and recovers in the background). */
  status(): SubscriptionStatus;
  stop(): Promise<void>;
}

/**
 * starting: subscribed, not yet consuming (a Kafka group join takes seconds);
 * running: consuming; retrying: lost (broker gone, topic missing, handler
 * failing), coming back by itself with backoff; stopped.
 */
export type SubscriptionState = "starting" | "running" | "retrying" | "stopped";

export interface SubscriptionStatus {
  group: string;
  topic: string;
  state: SubscriptionState;
  /** When the state last changed (ISO 8601). */
  since: string;
  /** Why it is retrying. */
  lastError?: string;
}

/** What a service reports about its bus (gRPC health detail "bus", logs, metrics). */
export interface BusStatus {
  transport: "postgres" | "kafka";
  /** Every subscription running and the last publish (if any) accepted. */
  healthy: boolean;
  publish: { failing: boolean; lastError?: string };
  subscriptions: SubscriptionStatus[];
}

export interface SubscribeOptions {
  group: string;
  topic: string;
  /**
   * Handles a batch in order; throwing makes the whole batch be redelivered. `tx` is given only on the
   * Postgres transport when `db` is a pool of the database the bus tables are in (see `db`): the transaction
   * that holds the group's position for this batch, and commits it after the handler returned.
   */
  handler: (messages: BusMessage[], tx?: Transaction<any>) => Promise<void>;
  /**
   * The consumer's own pool. On the Postgres transport, when the bus tables are in that database
   * (PgBus.isLocalTo), each batch is read and the group's position advanced in a transaction of this pool, and
   * the handler gets it (`tx`): what it writes there commits together with the position, or neither does.
   * A batch that fails in it (its handler, or the connection) is rolled back and handled once more at once
   * without `tx`, as on any other bus (the handler's own transactions, the position committed after it
   * returned), so that a handler can tell a bad message from a bad batch. Ignored by other transports.
   */
  db?: Kysely<any>;
}

/**
 * subscribe() returns once the subscription is registered; it joins and
 * consumes in the background, recovering from failures by itself (its
 * status() says where it stands). publish() resolves once the bus accepted
 * the messages and rejects when it could not; the caller (the outbox relay)
 * retries with backoff.
 */
export interface Bus {
  publish(topic: string, messages: BusMessage[]): Promise<void>;
  subscribe(options: SubscribeOptions): Promise<Subscription>;
  status(): BusStatus;
  /** Calls `listener` after every change of status(); returns the function that removes it. */
  onStatusChange(listener: () => void): () => void;
  /**
   * Messages of `topic` that `group` has not consumed yet (its lag behind the head); undefined when this bus
   * does not know (a Kafka group that fetched nothing yet in this process). Read for metrics, not per message.
   */
  lag?(group: string, topic: string): Promise<number | undefined>;
  close(): Promise<void>;
}

/**
 * The status of one bus instance, kept by its adapter: logs each change of a
 * subscription's state (once per change: the failures themselves are logged
 * by the job runner, rate-limited), tells listeners, and exposes two gauges
 * through the OpenTelemetry metrics API (exported when the process configures
 * a meter provider, e.g. OTEL_METRICS_EXPORTER):
 * `dpp.bus.subscription.running` (1/0 per group and topic) and
 * `dpp.bus.publish.failing` (1/0).
 */
export class BusStatusTracker {
  private readonly subs = new Map<object, SubscriptionStatus>();
  private readonly listeners = new Set<() => void>();
  private publishState: BusStatus["publish"] = { failing: false };
  private readonly callbacks: Array<[ObservableGauge, ObservableCallback]> = [];

  constructor(
    private readonly transport: BusStatus["transport"],
    private readonly log: Logger,
  ) {
    const meter = metrics.getMeter("@dpp/kit");
    const system = { "messaging.system": transport };
    const running = meter.createObservableGauge("dpp.bus.subscription.running", {
      description: "1 while the subscription consumes, 0 while it starts or retries",
    });
    const failing = meter.createObservableGauge("dpp.bus.publish.failing", {
      description: "1 while publishing to the bus fails",
    });
    this.callbacks.push(
      [
        running,
        (result) => {
          for (const s of this.subs.values())
            result.observe(s.state === "running" ? 1 : 0, {
              ...system,
              "messaging.consumer.group.name": s.group,
              "messaging.destination.name": s.topic,
            });
        },
      ],
      [failing, (result) => result.observe(this.publishState.failing ? 1 : 0, system)],
    );
    for (const [gauge, cb] of this.callbacks) gauge.addCallback(cb);
  }

  /** Registers a subscription (state "starting"); `key` identifies it in later calls. */
  add(key: object, group: string, topic: string): void {
    this.subs.set(key, { group, topic, state: "starting", since: new Date().toISOString() });
    this.changed();
  }

  get(key: object): SubscriptionStatus {
    const s = this.subs.get(key);
    if (!s) throw new Error("unknown subscription");
    return { ...s };
  }

  set(key: object, state: SubscriptionState, err?: unknown): void {
    const s = this.subs.get(key);
    if (!s) return;
    const lastError = err === undefined ? undefined : errorText(err);
    if (s.state === state && (state !== "retrying" || s.lastError === lastError)) return;
    const previous = s.state;
    const next: SubscriptionStatus = {
      group: s.group,
      topic: s.topic,
      state,
      since: new Date().toISOString(),
    };
    if (lastError !== undefined) next.lastError = lastError;
    this.subs.set(key, next);
    const where = { group: s.group, topic: s.topic, transport: this.transport, previous };
    if (state === "running") this.log.info(where, "bus subscription running");
    else if (state === "retrying" && previous !== "retrying")
      this.log.warn({ ...where, reason: lastError }, "bus subscription lost; retrying with backoff");
    else if (state === "stopped") this.log.info(where, "bus subscription stopped");
    this.changed();
  }

  remove(key: object): void {
    if (this.subs.delete(key)) this.changed();
  }

  publishSucceeded(): void {
    if (!this.publishState.failing) return;
    this.publishState = { failing: false };
    this.changed();
  }

  publishFailed(err: unknown): void {
    const lastError = errorText(err);
    if (this.publishState.failing && this.publishState.lastError === lastError) return;
    this.publishState = { failing: true, lastError };
    this.changed();
  }

  status(): BusStatus {
    const subscriptions = [...this.subs.values()].map((s) => ({ ...s }));
    return {
      transport: this.transport,
      healthy: !this.publishState.failing && subscriptions.every((s) => s.state === "running"),
      publish: { ...this.publishState },
      subscriptions,
    };
  }

  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  close(): void {
    for (const [gauge, cb] of this.callbacks) gauge.removeCallback(cb);
    this.listeners.clear();
  }

  private changed(): void {
    for (const l of [...this.listeners]) {
      try {
        l();
      } catch (err) {
        this.log.error({ err }, "bus status listener failed");
      }
    }
  }
}

function errorText(err: unknown): string {
  if (err instanceof Error) return `${err.name}: ${err.message}`;
  return String(err);
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
  /** A connection idle this long in the bus's pool is closed (30 s by default). */
  idleTimeoutMs?: number;
  /** Distinct statements the bus's pool prepares (DbOptions.preparedStatements). */
  preparedStatements?: number;
  /**
   * The pool of the service that uses this bus, when the bus tables are in that same database (the bus has no
   * database of its own): its outbox relay then moves events into the bus table in its own statements, and its
   * subscriptions that name this pool (SubscribeOptions.db) read their batches in its transactions.
   */
  local?: Kysely<any>;
}

/**
 * Messages live in bus.message. Publishing takes a per-topic transaction lock
 * before the ids are drawn, so ids are assigned in commit order and a reader
 * that resumes "after id N" can never skip a message that commits later.
 */
export class PgBus implements Bus {
  private readonly db: Kysely<BusDB>;
  private readonly subs = new Set<PgSubscription>();
  private readonly tracker: BusStatusTracker;

  constructor(private readonly o: PgBusOptions) {
    this.db = createDb<BusDB>({
      url: o.url,
      schema: BUS_SCHEMA,
      applicationName: "bus",
      max: 4,
      idleTimeoutMs: o.idleTimeoutMs,
      preparedStatements: o.preparedStatements,
      log: o.log,
    });
    this.tracker = new BusStatusTracker("postgres", o.log.child({ component: "bus" }));
  }

  status(): BusStatus {
    return this.tracker.status();
  }

  onStatusChange(listener: () => void): () => void {
    return this.tracker.onChange(listener);
  }

  async publish(topic: string, messages: BusMessage[]): Promise<void> {
    if (messages.length === 0) return;
    try {
      await this.insert(topic, messages);
      this.tracker.publishSucceeded();
    } catch (err) {
      this.tracker.publishFailed(err);
      throw err;
    }
  }

  /**
   * One statement, so one round trip and one transaction: the topic's lock is
   * taken in a one-row subquery the insert reads from, before any id is drawn
   * (ids are drawn as the insert receives rows, in the messages' order), and
   * the NOTIFY is delivered at its commit.
   */
  private async insert(topic: string, messages: BusMessage[]): Promise<void> {
    await sql`
      with inserted as (
        insert into message (topic, key, value, headers)
        select ${topic}, m.key, m.value, m.headers::jsonb
        from (select pg_advisory_xact_lock(${lockKey(`bus:${topic}`)})) as topic_lock,
             unnest(${messages.map((m) => m.key)}::text[], ${messages.map((m) => m.value)}::text[],
                    ${messages.map((m) => JSON.stringify(m.headers ?? {}))}::text[])
               with ordinality as m(key, value, headers, n)
        order by m.n
        returning 1)
      select pg_notify(${NOTIFY_CHANNEL}, ${topic})`.execute(this.db);
  }

  /** Whether `db` is the service's pool in the database the bus tables are in (PgBusOptions.local). */
  isLocalTo(db: Kysely<any> | undefined): boolean {
    return db !== undefined && db === this.o.local;
  }

  /**
   * For one statement on a pool the bus is local to (isLocalTo), the body of a data-modifying CTE that publishes
   * the rows of the statement's CTE `source` (columns `key`, `value`, `ord`) to `topic`, in `ord` order, without
   * headers: what publish() does, in the caller's statement. The topic's lock is taken before any message id is
   * drawn (and only when `source` has a row): the lock's one-row subquery is read by the join the sort of the
   * insert's rows waits for. Returns one row per message. The statement ends with `notifyIfAny(topic, cte)`, and
   * runs through `published()` so the bus's status sees its outcome.
   */
  insertFrom(topic: string, source: string): RawBuilder<unknown> {
    return sql`
      insert into ${sql.table(`${BUS_SCHEMA}.message`)} (topic, key, value)
      select ${topic}, s.key, s.value
      from ${sql.table(source)} as s,
           (select pg_advisory_xact_lock(${lockKey(`bus:${topic}`)})
            from (select 1 from ${sql.table(source)} limit 1) as any_row) as topic_lock
      order by s.ord
      returning 1`;
  }

  /** The NOTIFY that wakes the topic's subscribers at commit, when the CTE `inserted` (insertFrom) inserted a row. */
  notifyIfAny(topic: string, inserted: string): RawBuilder<unknown> {
    return sql`(select pg_notify(${NOTIFY_CHANNEL}, ${topic}) where exists (select 1 from ${sql.table(inserted)}))`;
  }

  /** Runs a statement that publishes through insertFrom, reporting its outcome in status(). */
  async published<T>(statement: () => Promise<T>): Promise<T> {
    try {
      const result = await statement();
      this.tracker.publishSucceeded();
      return result;
    } catch (err) {
      this.tracker.publishFailed(err);
      throw err;
    }
  }

  async lag(group: string, topic: string): Promise<number | undefined> {
    const { rows } = await sql<{ lag: number }>`
      select greatest(0,
        coalesce((select max(m.id) from ${sql.table(`${BUS_SCHEMA}.message`)} m where m.topic = ${topic}), 0)
        - coalesce((select o.position from ${sql.table(`${BUS_SCHEMA}.consumer_offset`)} o
                    where o.group_id = ${group} and o.topic = ${topic}), 0))::float8 as lag`.execute(this.db);
    return rows[0]?.lag;
  }

  async subscribe(options: SubscribeOptions): Promise<Subscription> {
    const sub = new PgSubscription(this.db, this.o, options, this.tracker);
    this.subs.add(sub);
    await sub.start();
    return {
      status: () => this.tracker.get(sub),
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
    this.tracker.close();
    await this.db.destroy();
  }
}

/** Backoff of a subscription's LISTEN connection after it ended: first delay and cap. */
const RELISTEN_MIN_MS = 250;
const RELISTEN_MAX_MS = 30_000;

class PgSubscription {
  private listener?: pg.Client;
  private relistenTimer?: NodeJS.Timeout;
  private relistenFailures = 0;
  private job?: LeaderJob;
  private stopped = false;
  private offsetRowExists = false;
  /** NOTIFYs of the topic so far, and how many of them a successful pass read after. */
  private notified = 0;
  private covered = 0;

  constructor(
    private readonly db: Kysely<BusDB>,
    private readonly o: PgBusOptions,
    private readonly s: SubscribeOptions,
    private readonly tracker: BusStatusTracker,
  ) {
    tracker.add(this, s.group, s.topic);
  }

  async start(): Promise<void> {
    await this.listen();
    // Listening: the subscription runs (a replica whose group another holds waits its turn, running).
    this.tracker.set(this, "running");
    // Polling runs under the job runner, woken by NOTIFY and every poll interval, backing off while the
    // handler fails. One consumer of a group reads at a time: the group's offset row, locked in the batch's
    // transaction (others skip the pass), not the runner's session lock (two more transactions a pass).
    this.job = startLeaderJob({
      name: `bus:${this.s.group}:${this.s.topic}`,
      intervalMs: this.o.pollIntervalMs ?? 250,
      lock: false,
      // A NOTIFY that arrived while a pass ran needs no pass of its own when that pass read the batch after it.
      pending: () => this.covered !== this.notified,
      log: this.o.log.child({ group: this.s.group }),
      run: async () => {
        try {
          const n = await this.drain();
          if (!this.stopped) this.tracker.set(this, "running");
          return n;
        } catch (err) {
          if (!this.stopped) this.tracker.set(this, "retrying", err);
          throw err;
        }
      },
      backoffMaxMs: 5_000,
    });
  }

  /**
   * Opens the LISTEN connection. When it ends while the subscription runs (a restarted or failed-over server, a
   * terminated backend), `relisten` opens another, retrying with backoff; polling delivers meanwhile.
   */
  private async listen(): Promise<void> {
    const listener = new pg.Client({
      connectionString: this.o.url,
      application_name: `bus-listen-${this.s.group}`,
    });
    listener.on("error", (err: Error) =>
      this.o.log.warn({ err: { message: err.message } }, "bus listener error; polling continues"),
    );
    listener.on("notification", (n) => {
      if (n.payload !== this.s.topic) return;
      this.notified++;
      this.job?.wake();
    });
    listener.on("end", () => {
      if (this.listener !== listener) return;
      this.listener = undefined;
      this.relisten();
    });
    try {
      await listener.connect();
      await listener.query(`listen ${NOTIFY_CHANNEL}`);
    } catch (err) {
      await listener.end().catch(() => undefined);
      throw err;
    }
    this.listener = listener;
  }

  /** Another LISTEN connection after the last one ended: after a backoff, then a pass for what was missed. */
  private relisten(): void {
    if (this.stopped || this.relistenTimer) return;
    const delay = backoffMs(this.relistenFailures, RELISTEN_MIN_MS, RELISTEN_MAX_MS);
    this.relistenTimer = setTimeout(() => {
      this.relistenTimer = undefined;
      if (this.stopped) return;
      this.listen().then(
        () => {
          if (this.stopped) return void this.listener?.end().catch(() => undefined);
          this.o.log.info(
            { group: this.s.group, failures: this.relistenFailures },
            "bus listener reconnected",
          );
          this.relistenFailures = 0;
          this.job?.wake();
        },
        (err: unknown) => {
          this.relistenFailures++;
          this.o.log.warn(
            {
              group: this.s.group,
              failures: this.relistenFailures,
              err: { message: String((err as Error)?.message ?? err) },
            },
            "bus listener could not reconnect; polling continues",
          );
          this.relisten();
        },
      );
    }, delay);
    this.relistenTimer.unref();
  }

  private async drain(): Promise<number> {
    const batch = this.o.batchSize ?? 200;
    let total = 0;
    for (;;) {
      if (this.stopped) return total;
      const notified = this.notified;
      const n = await this.pollOnce(batch);
      this.covered = notified;
      total += n;
      if (n < batch) return total;
    }
  }

  /**
   * One batch in one transaction: one statement locks the group's offset row (skipping the pass when another
   * consumer of the group holds it), reads the next messages after its position and advances the position past
   * them; the handler runs; the commit makes the new position visible, and a failed handler rolls it back, so the
   * batch is read again. The position the statement reads is the newest committed one even when the statement's
   * snapshot predates the previous holder's commit (a row locked FOR UPDATE is the row's newest version), and
   * the messages after it it may then miss committed after that snapshot: their NOTIFY wakes another pass. The
   * position is a scalar subquery, so the messages are read in index order from it and the read stops at the
   * batch size, whatever the backlog.
   *
   * When the subscriber named a pool the bus is local to (SubscribeOptions.db), the pass runs in a transaction
   * of that pool and the handler joins it. When that pass fails (the handler, or its connection), everything
   * in it is rolled back, and the batch is read and handled once more at once on the bus's own pool, the
   * handler writing in its own transactions; when that fails too, the pass fails (the job backs off).
   */
  private async pollOnce(batch: number): Promise<number> {
    if (!this.offsetRowExists) {
      await sql`
        insert into ${sql.table(`${BUS_SCHEMA}.consumer_offset`)} (group_id, topic, position)
        values (${this.s.group}, ${this.s.topic}, 0)
        on conflict (group_id, topic) do nothing`.execute(this.db);
      this.offsetRowExists = true;
    }
    const joined = this.s.db !== undefined && this.s.db === this.o.local ? this.s.db : undefined;
    if (joined) {
      try {
        return await this.pass(joined, batch, true);
      } catch (err) {
        this.o.log.debug(
          { group: this.s.group, topic: this.s.topic, err },
          "bus batch failed in the subscriber's transaction; handling it once more apart",
        );
      }
    }
    return this.pass(this.db, batch, false);
  }

  private async pass(db: Kysely<any>, batch: number, joined: boolean): Promise<number> {
    const { group, topic } = this.s;
    const offsets = sql.table(`${BUS_SCHEMA}.consumer_offset`);
    return db.transaction().execute(async (trx) => {
      const { rows } = await sql<{ id: number; key: string; value: string; headers: unknown }>`
        with cur as (
          select position from ${offsets} where group_id = ${group} and topic = ${topic}
          for update skip locked),
        batch as (
          select id, key, value, headers from ${sql.table(`${BUS_SCHEMA}.message`)}
          where topic = ${topic} and id > (select position from cur)
          order by id limit ${batch}),
        advanced as (
          update ${offsets} set position = (select max(id) from batch)
          where group_id = ${group} and topic = ${topic} and exists (select 1 from batch)
          returning 1)
        select id, key, value, headers from batch order by id`.execute(trx);
      if (rows.length === 0) return 0;
      const messages = rows.map((r) => ({
        key: r.key,
        value: r.value,
        headers: (typeof r.headers === "string" ? JSON.parse(r.headers) : r.headers) as Record<
          string,
          string
        >,
      }));
      await (joined ? this.s.handler(messages, trx) : this.s.handler(messages));
      return rows.length;
    });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.relistenTimer) clearTimeout(this.relistenTimer);
    await this.job?.stop();
    await this.listener?.end().catch(() => undefined);
    this.tracker.set(this, "stopped");
    this.tracker.remove(this);
  }
}
