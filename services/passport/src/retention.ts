/**
 * Test-mode retention: a test passport is deleted 90 days after it was last edited (its updated_at, which every
 * change and transition moves), together with its GTIN claims, validation records and publish approvals, and a
 * passport.deleted event. Live passports are never deleted by this job.
 *
 * One pass runs in one transaction under a transaction-level advisory lock, so with several replicas only one
 * runs at a time (the others skip that tick). Passes delete in batches until nothing is due.
 */
import type { Kysely } from "kysely";
import { domainEvent, passportRelated, type Logger } from "@dpp/kit";
import type { PassportDB } from "./store/schema";
import { PassportStore } from "./store";

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
    return new PassportStore(this.db).transaction(async (tx) => {
      if (!(await tx.tryLockRetention())) return 0;
      const due = await tx.deleteTestPassportsPastRetention(TEST_RETENTION_DAYS, this.o.batchSize ?? 200);
      for (const p of due) {
        const tenant = { organizationId: p.organization_id, livemode: false };
        await tx.deleteDependents(tenant, p.id);
        await tx.appendEvent(domainEvent("passport.deleted", tenant, passportRelated(p, p.status)));
      }
      return due.length;
    });
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.running;
  }
}
