/**
 * The background worker: every replica runs it (IMPORTS_WORKER=on), each with a few loops. A loop leases one job
 * for one batch (ImportsStore.lease: round-robin between organizations, a held lease skipped), sends the job's
 * next pending rows to passport's CreatePassports under per-row keys `<job id>:<row index>`, records the
 * outcomes and gives the job back (ImportsStore.finishBatch). So a job of one organization holds a worker for one
 * batch at a time, and a worker that dies loses its job when the lease expires; the next holder sends the same
 * rows under the same keys, which passport answers from its records: no row is created twice or lost.
 * docs/decisions/0053-imports-jobs-rows-and-per-row-keys.md.
 */
import { randomUUID } from "node:crypto";
import { ERROR_TABLE, type ErrorCode } from "@dpp/contract";
import type { ClientOf, Logger, RequestContext } from "@dpp/kit";
import type { passportV1 } from "@dpp/proto";
import type { RowError } from "../store/schema";
import type { ImportsStore, JobRow, RowOutcome } from "../store/store";

export type PassportClient = ClientOf<typeof passportV1.PassportService>;

export interface WorkerOptions {
  store: ImportsStore;
  passport: Pick<PassportClient, "createPassports">;
  log: Logger;
  concurrency: number;
  batchRows: number;
  leaseMs: number;
  pollMs: number;
  maxAttempts: number;
  onCommitted: () => void;
}

/** A row refusal that says nothing about the row (passport was busy, down or out of time): the row is sent again. */
export function isRetryable(code: string): boolean {
  const entry = ERROR_TABLE[code as ErrorCode] as { status: number } | undefined;
  return !entry || entry.status >= 500 || code === "resource_busy" || code === "rate_limited";
}

/**
 * A row's error: the refusal POST .../passports would have answered, with one exception the spec names: a row
 * refused only for its category (validation_failed, its one issue on /category with the rule unknown_category)
 * fails with the code `unknown_category`, the details unchanged.
 */
export function rowError(e: { code: string; message: string; detailsJson: string }): RowError {
  const details = JSON.parse(e.detailsJson || "{}") as Record<string, unknown>;
  const issues = Array.isArray(details.issues) ? (details.issues as { rule?: unknown }[]) : [];
  const code =
    e.code === "validation_failed" && issues.length === 1 && issues[0]!.rule === "unknown_category"
      ? "unknown_category"
      : e.code;
  return { code, detail: e.message, details };
}

/** The key of a row's create at passport: stable for the row, whoever sends it and however often. */
export const rowKey = (jobId: string, rowIndex: number) => `${jobId}:${rowIndex}`;

/** The context the job's rows are created under: the POST's tenant, key and plan, signed by this service. */
function contextOf(job: JobRow): RequestContext {
  const c = job.context;
  const ctx: RequestContext = {
    requestId: `${job.id}-${randomUUID()}`,
    organizationId: job.organization_id,
    livemode: job.livemode,
  };
  if (c.keyId !== undefined) ctx.keyId = c.keyId;
  if (c.credentialKind !== undefined) ctx.credentialKind = c.credentialKind;
  if (c.plan !== undefined) ctx.plan = { ...c.plan };
  return ctx;
}

/** Runs one batch of a leased job; true when it did something (so the loop looks for more at once). */
export async function runBatch(o: WorkerOptions, owner: string): Promise<boolean> {
  const job = await o.store.lease(owner, o.leaseMs);
  if (!job) return false;
  const rows = await o.store.pendingRows(job.id, o.batchRows);
  let outcomes: RowOutcome[] = [];
  let retryAfterMs: number | undefined;
  if (rows.length) {
    try {
      const res = await o.passport.createPassports(
        {
          rows: rows.map((r) => ({
            key: rowKey(job.id, r.row_index),
            category: r.category,
            externalId: r.external_id ?? undefined,
            dataJson: r.data_json,
          })),
        },
        // The call ends well before the lease does: a late answer is never recorded by a worker that lost it.
        { context: contextOf(job), deadlineMs: Math.max(1000, Math.floor(o.leaseMs / 2)) },
      );
      res.results.forEach((result, i) => {
        const rowIndex = rows[i]!.row_index;
        const out = result.outcome;
        if (out.case === "passport") outcomes.push({ rowIndex, passportId: out.value.id });
        else if (out.case === "error" && !isRetryable(out.value.code))
          outcomes.push({ rowIndex, error: rowError(out.value) });
        else retryAfterMs = 1000;
      });
    } catch (err) {
      o.log.warn(
        { err, job_id: job.id, attempts: job.attempts },
        "an import batch failed; the job is retried",
      );
      outcomes = [];
      retryAfterMs = Math.min(30_000, 500 * 2 ** Math.min(job.attempts, 6));
    }
  }
  const done = await o.store.finishBatch(job, owner, outcomes, { retryAfterMs, maxAttempts: o.maxAttempts });
  if (!done)
    o.log.warn({ job_id: job.id }, "an import batch outlived its lease; another worker resumes the job");
  else if (done.status === "completed") o.onCommitted();
  else if (done.status === "failed")
    o.log.error({ job_id: job.id, attempts: done.attempts }, "an import job failed after its last attempt");
  return true;
}

export interface Worker {
  /** Looks for work at once (a job was just queued). */
  wake(): void;
  stop(): Promise<void>;
}

export function startWorker(o: WorkerOptions): Worker {
  let stopped = false;
  const sleepers = new Set<() => void>();
  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        sleepers.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      sleepers.add(done);
    });
  const loop = async (n: number) => {
    const owner = `${process.pid}-${randomUUID()}-${n}`;
    while (!stopped) {
      let worked = false;
      try {
        worked = await runBatch(o, owner);
      } catch (err) {
        o.log.error({ err }, "the import worker failed to lease or record a batch; it goes on");
      }
      if (!worked && !stopped) await sleep(o.pollMs);
    }
  };
  const loops = Array.from({ length: o.concurrency }, (_, n) => loop(n));
  return {
    wake: () => {
      for (const wake of [...sleepers]) wake();
    },
    stop: async () => {
      stopped = true;
      for (const wake of [...sleepers]) wake();
      await Promise.all(loops);
    },
  };
}
