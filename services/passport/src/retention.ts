/**
 * Test-mode retention: a test passport is deleted 90 days after it was last edited (its updated_at, which every
 * change and transition moves), together with its GTIN claims, validation records and publish approvals, and a
 * passport.deleted event. Live passports are never deleted by this job.
 *
 * One pass runs in one transaction under a transaction-level advisory lock, so with several replicas only one
 * runs at a time (the others skip that tick). Passes delete in batches until nothing is due.
 */
import { sql, type Kysely } from "kysely";
import { domainEvent, lockKey, passportRelated, writeOutbox, type Logger } from "@dpp/kit";
import type { PassportDB } from "./store/schema";

export const TEST_RETENTION_DAYS = 90;

export interface RetentionOptions {
  intervalMs: number;
  batchSize?: number;
  onCommitted?: () => void;
}

export class RetentionJob {
  private timer?: NodeJS.Timeout;
  private running?: Promise<unknown>;

  constructor(
    private readonly db: Kysely<PassportDB>,
    private readonly log: Logger,
    private readonly o: RetentionOptions,
  ) {}

  start(): void {
    this.timer = setInterval(() => this.tick(), this.o.intervalMs);
    this.timer.unref();
    this.tick();
  }

  private tick(): void {
    if (this.running) return;
    this.running = this.runOnce()
      .then((n) => {
        if (n > 0) this.log.info({ deleted: n }, "test passports past retention deleted");
      })
      .catch((err: unknown) => this.log.error({ err }, "retention pass failed; retried next interval"))
      .finally(() => {
        this.running = undefined;
      });
  }

  /** Deletes every test passport past retention; returns how many. 0 when another replica holds the lock. */
  async runOnce(): Promise<number> {
    let total = 0;
    for (;;) {
      const n = await this.batch();
      total += n;
      if (n < (this.o.batchSize ?? 200)) break;
    }
    if (total > 0) this.o.onCommitted?.();
    return total;
  }

  private batch(): Promise<number> {
    return this.db.transaction().execute(async (trx) => {
      const { rows } = await sql<{ ok: boolean }>`select pg_try_advisory_xact_lock(${lockKey(
        "passport:test-retention",
      )}) as ok`.execute(trx);
      if (!rows[0]?.ok) return 0;
      const due = await trx
        .deleteFrom("passport")
        .where("livemode", "=", false)
        .where((eb) =>
          eb.and([
            eb("updated_at", "<", sql<Date>`now() - make_interval(days => ${TEST_RETENTION_DAYS})`),
            eb(
              sql.ref("id"),
              "in",
              eb
                .selectFrom("passport as q")
                .select("q.id")
                .where("q.livemode", "=", false)
                .where("q.updated_at", "<", sql<Date>`now() - make_interval(days => ${TEST_RETENTION_DAYS})`)
                .orderBy("q.updated_at")
                .limit(this.o.batchSize ?? 200),
            ),
          ]),
        )
        .returningAll()
        .execute();
      for (const p of due) {
        const tenant = { organizationId: p.organization_id, livemode: false };
        for (const table of ["gtin_claim", "validation", "publish_approval"] as const)
          await trx
            .deleteFrom(table)
            .where("organization_id", "=", p.organization_id)
            .where("livemode", "=", false)
            .where("passport_id", "=", p.id)
            .execute();
        await writeOutbox(trx, domainEvent("passport.deleted", tenant, passportRelated(p, p.status)));
      }
      return due.length;
    });
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.running;
  }
}
