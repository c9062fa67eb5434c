/**
 * Feed retention: events that entered the feed more than FEED_RETENTION_DAYS
 * days ago are deleted by a periodic job (every FEED_RETENTION_INTERVAL_MS, in
 * chunks). Replicas take turns through a transaction-scoped advisory lock, so
 * only one deletes at a time. Days are counted from arrival (received_at), not
 * from the event's created_at, so events replayed after a long outage are not
 * deleted on arrival. 0 days turns retention off.
 */
import { sql, type Kysely } from "kysely";
import { lockKey, type Logger } from "@dpp/kit";
import type { EventsRepository } from "./events.repository";
import type { EventsDB } from "./schema";

export interface FeedRetentionOptions {
  days: number;
  intervalMs: number;
  chunk?: number;
}

export class FeedRetention {
  private timer?: NodeJS.Timeout;
  private running?: Promise<number>;

  constructor(
    private readonly db: Kysely<EventsDB>,
    private readonly repo: Pick<EventsRepository, "deleteOlderThan">,
    private readonly log: Logger,
    private readonly o: FeedRetentionOptions,
  ) {}

  start(): void {
    if (this.o.days <= 0) return;
    this.timer = setInterval(() => void this.tick(), this.o.intervalMs);
    this.timer.unref();
  }

  private async tick(): Promise<void> {
    if (this.running) return;
    this.running = this.runOnce();
    try {
      const n = await this.running;
      if (n > 0) this.log.info({ deleted: n, days: this.o.days }, "feed retention deleted old events");
    } catch (err) {
      this.log.warn({ err }, "feed retention pass failed; retried at the next interval");
    } finally {
      this.running = undefined;
    }
  }

  /** One pass: deletes every expired event, chunk by chunk; 0 when another replica holds the lock. */
  async runOnce(): Promise<number> {
    if (this.o.days <= 0) return 0;
    const chunk = this.o.chunk ?? 5_000;
    let total = 0;
    for (;;) {
      // The lock lives as long as the transaction that deletes the chunk.
      const n = await this.db.transaction().execute(async (trx) => {
        const { rows } = await sql<{ ok: boolean }>`select pg_try_advisory_xact_lock(${lockKey(
          "events:feed-retention",
        )}) as ok`.execute(trx);
        if (!rows[0]?.ok) return -1;
        return this.repo.deleteOlderThan(this.o.days, chunk, trx);
      });
      if (n < 0) return total;
      total += n;
      if (n < chunk) return total;
    }
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.running?.catch(() => undefined);
  }
}
