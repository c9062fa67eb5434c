/**
 * Every query of the imports service. Each query of a tenant's jobs filters organization_id and livemode; each
 * write of a call goes through the kit's singleStatement or transaction with the call's context, so that a keyed
 * POST's job commits with its idempotency record. The worker's queries (lease, results, release) run outside any
 * call (`null`): the lease is what makes them safe, not a key.
 */
import { sql, type Kysely, type Selectable } from "kysely";
import { domainEvent, newId } from "@dpp/contract";
import { transaction, writeOutbox, type TenantContext } from "@dpp/kit";
import type { ImportsDB, JobContext, JobRowTable, JobStatus, JobTable, RowError } from "./schema";

export type JobRow = Selectable<JobTable>;
export type JobRowRow = Selectable<JobRowTable>;

export interface NewRow {
  category: string;
  externalId: string | null;
  dataJson: string;
}

/** A processed row's outcome, as the worker records it. */
export type RowOutcome = { rowIndex: number; passportId: string } | { rowIndex: number; error: RowError };

const jobName = (j: { organization_id: string; id: string }) =>
  `organizations/${j.organization_id}/imports/${j.id}`;

export class ImportsStore {
  constructor(readonly db: Kysely<ImportsDB>) {}

  /** The job and its rows, one transaction (joined to a keyed call's). */
  create(t: TenantContext, context: JobContext, rows: NewRow[]): Promise<JobRow> {
    return transaction(this.db, t, async (trx) => {
      const job = await trx
        .insertInto("job")
        .values({
          id: newId("imp"),
          organization_id: t.organizationId,
          livemode: t.livemode,
          status: "queued",
          total_rows: rows.length,
          context: JSON.stringify(context),
          started_at: null,
          completed_at: null,
          retry_at: null,
          lease_owner: null,
          lease_expires_at: null,
        })
        .returningAll()
        .executeTakeFirstOrThrow();
      await trx
        .insertInto("job_row")
        .values(
          rows.map((r, i) => ({
            job_id: job.id,
            row_index: i,
            organization_id: t.organizationId,
            livemode: t.livemode,
            category: r.category,
            external_id: r.externalId,
            data_json: r.dataJson,
            passport_id: null,
            error: null,
            processed_at: null,
          })),
        )
        .execute();
      return job;
    });
  }

  get(t: TenantContext, id: string): Promise<JobRow | undefined> {
    return this.db
      .selectFrom("job")
      .selectAll()
      .where("organization_id", "=", t.organizationId)
      .where("livemode", "=", t.livemode)
      .where("id", "=", id)
      .executeTakeFirst();
  }

  /** Newest first: `fetch` jobs after the id `afterId` (the kit's page() reads limit + 1). */
  list(t: TenantContext, fetch: number, afterId: string | undefined, status?: JobStatus): Promise<JobRow[]> {
    let q = this.db
      .selectFrom("job")
      .selectAll()
      .where("organization_id", "=", t.organizationId)
      .where("livemode", "=", t.livemode);
    if (status !== undefined) q = q.where("status", "=", status);
    if (afterId !== undefined) q = q.where("id", "<", afterId);
    return q.orderBy("id", "desc").limit(fetch).execute();
  }

  /** Processed rows of a job after `afterIndex`, by row index (`fetch` = limit + 1). */
  processedRows(t: TenantContext, jobId: string, fetch: number, afterIndex: number): Promise<JobRowRow[]> {
    return this.db
      .selectFrom("job_row")
      .selectAll()
      .where("organization_id", "=", t.organizationId)
      .where("livemode", "=", t.livemode)
      .where("job_id", "=", jobId)
      .where("status", "<>", "pending")
      .where("row_index", ">", afterIndex)
      .orderBy("row_index")
      .limit(fetch)
      .execute();
  }

  // --- the worker ------------------------------------------------------------------------------------------

  /**
   * Leases the next job for one batch, or undefined. Round-robin: of each organization's waiting jobs the one
   * whose turn is oldest, and of those the organization whose turn is oldest; a job whose lease is held is
   * skipped (a job leased by a worker that died is taken once its lease expired, and counts a new attempt).
   */
  async lease(owner: string, leaseMs: number): Promise<JobRow | undefined> {
    const { rows } = await sql<JobRow>`
      with waiting as (
        select distinct on (organization_id, livemode) id, turn_at from job
        where status in ('queued', 'running')
          and (lease_expires_at is null or lease_expires_at < now())
          and (retry_at is null or retry_at <= now())
        order by organization_id, livemode, turn_at, id
      ),
      picked as (
        select j.id from job j join waiting w on w.id = j.id
        order by w.turn_at, j.id
        limit 1
        for update of j skip locked
      )
      update job set
        lease_owner = ${owner},
        lease_expires_at = now() + make_interval(secs => ${leaseMs / 1000}),
        attempts = case when status = 'queued' then 1
                        when lease_expires_at is not null then attempts + 1
                        else attempts end,
        status = 'running',
        started_at = coalesce(started_at, now())
      from picked where job.id = picked.id
        and (job.lease_expires_at is null or job.lease_expires_at < now())
      returning job.*`.execute(this.db);
    return rows[0];
  }

  /** The first `limit` pending rows of a job, by row index. */
  pendingRows(jobId: string, limit: number): Promise<JobRowRow[]> {
    return this.db
      .selectFrom("job_row")
      .selectAll()
      .where("job_id", "=", jobId)
      .where("status", "=", "pending")
      .orderBy("row_index")
      .limit(limit)
      .execute();
  }

  /**
   * Records a batch's outcomes and ends the lease, in one transaction, only while `owner` still holds it (a
   * worker whose lease expired and was taken over records nothing: the next holder sends the same rows under
   * the same keys and gets the same answers). `retryAfterMs` (rows left to retry) counts a failed try. A job
   * whose rows are all processed is completed, with its import.completed. False when the lease was lost.
   */
  async finishBatch(
    job: JobRow,
    owner: string,
    outcomes: RowOutcome[],
    o: { retryAfterMs?: number; maxAttempts: number },
  ): Promise<JobRow | undefined> {
    return transaction(this.db, null, async (trx) => {
      const held = await trx
        .selectFrom("job")
        .selectAll()
        .where("id", "=", job.id)
        .where("lease_owner", "=", owner)
        .where("lease_expires_at", ">", sql<Date>`now()`)
        .forUpdate()
        .executeTakeFirst();
      if (!held) return undefined;
      let succeeded = 0;
      let failed = 0;
      if (outcomes.length) {
        const idx = outcomes.map((o) => o.rowIndex);
        const ids = outcomes.map((o) => ("passportId" in o ? o.passportId : null));
        const errs = outcomes.map((o) => ("error" in o ? JSON.stringify(o.error) : null));
        const { rows } = await sql<{ status: string }>`
          update job_row r set
            status = case when u.passport_id is not null then 'succeeded' else 'failed' end,
            passport_id = u.passport_id,
            error = u.error::jsonb,
            processed_at = now()
          from unnest(${idx}::int[], ${ids}::text[], ${errs}::text[]) as u(row_index, passport_id, error)
          where r.job_id = ${job.id} and r.row_index = u.row_index and r.status = 'pending'
          returning r.status`.execute(trx);
        for (const r of rows)
          if (r.status === "succeeded") succeeded++;
          else failed++;
      }
      const processed = held.succeeded_rows + held.failed_rows + succeeded + failed;
      const done = processed >= held.total_rows;
      const retry = !done && o.retryAfterMs !== undefined;
      const gaveUp = retry && held.attempts >= o.maxAttempts;
      const status: JobStatus = done ? "completed" : gaveUp ? "failed" : "running";
      const updated = await trx
        .updateTable("job")
        .set({
          succeeded_rows: held.succeeded_rows + succeeded,
          failed_rows: held.failed_rows + failed,
          status,
          completed_at: done || gaveUp ? sql<Date>`now()` : null,
          lease_owner: null,
          lease_expires_at: null,
          turn_at: sql<Date>`now()`,
          attempts: retry && !gaveUp ? held.attempts + 1 : held.attempts,
          retry_at:
            retry && !gaveUp ? sql<Date>`now() + make_interval(secs => ${o.retryAfterMs! / 1000})` : null,
        })
        .where("id", "=", job.id)
        .returningAll()
        .executeTakeFirstOrThrow();
      if (done)
        await writeOutbox(
          trx,
          domainEvent(
            "import.completed",
            { organizationId: updated.organization_id, livemode: updated.livemode },
            {
              object: "import_job",
              id: updated.id,
              name: jobName(updated),
              status: updated.status,
              total_rows: updated.total_rows,
              succeeded_rows: updated.succeeded_rows,
              failed_rows: updated.failed_rows,
            },
          ),
        );
      return updated;
    });
  }
}
