/**
 * Imports: passports created in bulk as asynchronous jobs of at most 500 rows
 * (`dpp.organization(id).imports`). `importRows` takes any number of rows, queues them as jobs of 500, follows
 * the jobs and yields every row's result as it is processed, in the rows' order.
 */
import {
  Core,
  readSettings,
  writeSettings,
  type RequestOptions,
  type WithResponse,
  type WriteOptions,
} from "./core";
import type { components } from "./openapi.generated";
import type { ListIterator } from "./pagination";

export type ImportJob = components["schemas"]["ImportJob"];
export type ImportJobStatus = components["schemas"]["ImportJobStatus"];
export type ImportRow = components["schemas"]["ImportRow"];
export type ImportRowInput = components["schemas"]["ImportRowInput"];
export type ImportJobWithRows = ImportJob & { rows: components["schemas"]["ImportRowList"] };

/** Rows of one job (the API's limit). */
export const IMPORT_JOB_MAX_ROWS = 500;

export interface ListImportsParams {
  status?: ImportJobStatus;
  limit?: number;
  cursor?: string;
}

/** One row's result from `importRows`: the API's import row, where it came from, and the row as given. */
export interface ImportRowResult extends ImportRow {
  /** The row's position in what was given to importRows (0-based). */
  index: number;
  job_id: string;
  input: ImportRowInput;
}

export interface ImportProgress {
  /** Rows queued in jobs so far. */
  queued: number;
  /** Rows with a result (succeeded or failed). */
  processed: number;
  succeeded: number;
  failed: number;
  jobs: number;
}

export interface ImportRowsOptions extends RequestOptions {
  /** Rows per job, 1 to 500 (default 500). */
  jobSize?: number;
  /** Jobs queued ahead of the one being followed (default 4). */
  jobsAhead?: number;
  /** How often a job is read while it runs (default 250 ms). */
  pollMs?: number;
  /** Called after every change of the counts. */
  onProgress?: (p: ImportProgress) => void;
}

/** The import jobs of one organization, in the key's mode. */
export class Imports {
  constructor(
    private readonly core: Core,
    private readonly organization: string,
  ) {}

  /** Queues a job of 1 to 500 rows (202, status `queued`). */
  async create(rows: ImportRowInput[], options: WriteOptions = {}): Promise<WithResponse<ImportJob>> {
    return this.core.send(writeSettings(options), (fetch) =>
      this.core.api.POST("/organizations/{organization}/imports", {
        params: { path: { organization: this.organization } },
        body: { rows },
        fetch,
      }),
    );
  }

  /** The job with up to `row_limit` row results after `after_row_index`. */
  async get(
    id: string,
    params: { row_limit?: number; after_row_index?: number } = {},
    options: RequestOptions = {},
  ): Promise<WithResponse<ImportJobWithRows>> {
    return this.core.send(readSettings(options), (fetch) =>
      this.core.api.GET("/organizations/{organization}/imports/{id}", {
        params: { path: { organization: this.organization, id }, query: params },
        fetch,
      }),
    ) as Promise<WithResponse<ImportJobWithRows>>;
  }

  /** Newest first, page after page. */
  list(params: ListImportsParams = {}, options: RequestOptions = {}): ListIterator<ImportJob> {
    const { cursor: start, ...filters } = params;
    return this.core.list(
      (cursor) =>
        this.core.send(readSettings(options), (fetch) =>
          this.core.api.GET("/organizations/{organization}/imports", {
            params: {
              path: { organization: this.organization },
              query: { ...filters, ...(cursor ? { cursor } : {}) },
            },
            fetch,
          }),
        ),
      start,
    );
  }

  /** Every processed row of a job so far, by row index. */
  async *rows(id: string, options: RequestOptions = {}): AsyncGenerator<ImportRow, void, undefined> {
    let after: number | undefined;
    for (;;) {
      const job = await this.get(id, { row_limit: IMPORT_JOB_MAX_ROWS, after_row_index: after }, options);
      yield* job.rows.data;
      if (job.rows.next_after_row_index === null) return;
      after = job.rows.next_after_row_index;
    }
  }

  /**
   * Imports any number of rows: queued as jobs of `jobSize` (500), a few jobs ahead, each followed until it is
   * done; yields each row's result in the rows' order. A job that ends `failed` (the platform could not process
   * it) throws, naming the job: its rows without a result were not created.
   */
  async *importRows(
    rows: Iterable<ImportRowInput> | AsyncIterable<ImportRowInput>,
    options: ImportRowsOptions = {},
  ): AsyncGenerator<ImportRowResult, ImportProgress, undefined> {
    const { jobSize = IMPORT_JOB_MAX_ROWS, jobsAhead = 4, pollMs = 250, onProgress, ...request } = options;
    if (!Number.isInteger(jobSize) || jobSize < 1 || jobSize > IMPORT_JOB_MAX_ROWS)
      throw new RangeError(`jobSize must be 1 to ${IMPORT_JOB_MAX_ROWS}`);
    const progress: ImportProgress = { queued: 0, processed: 0, succeeded: 0, failed: 0, jobs: 0 };
    const chunks = chunked(rows, jobSize);
    const queued: Promise<{ job: ImportJob; rows: ImportRowInput[]; first: number }>[] = [];
    let exhausted = false;
    let next = 0;
    const queueOne = async () => {
      const chunk = await chunks.next();
      if (chunk.done) {
        exhausted = true;
        return;
      }
      const first = next;
      next += chunk.value.length;
      queued.push(
        this.create(chunk.value, request).then((job) => {
          progress.queued += chunk.value.length;
          progress.jobs++;
          onProgress?.({ ...progress });
          return { job, rows: chunk.value, first };
        }),
      );
    };
    while (!exhausted && queued.length < jobsAhead) await queueOne();
    while (queued.length) {
      const { job, rows: input, first } = await queued.shift()!;
      if (!exhausted) await queueOne();
      let after = -1;
      for (;;) {
        const read = await this.get(
          job.id,
          { row_limit: IMPORT_JOB_MAX_ROWS, after_row_index: after },
          request,
        );
        for (const r of read.rows.data) {
          after = r.row_index;
          progress.processed++;
          if (r.status === "succeeded") progress.succeeded++;
          else progress.failed++;
          yield { ...r, index: first + r.row_index, job_id: job.id, input: input[r.row_index]! };
        }
        if (read.rows.data.length) onProgress?.({ ...progress });
        if (read.rows.has_more) continue;
        if (read.status === "completed" && after >= read.total_rows - 1) break;
        if (read.status === "failed")
          throw new Error(
            `import job ${job.id} failed after ${read.attempts} attempts; ${read.pending_rows} of its rows were not created`,
          );
        await new Promise((resolve) => setTimeout(resolve, pollMs));
      }
    }
    return progress;
  }
}

/** The rows in arrays of `size`. */
async function* chunked<T>(
  rows: Iterable<T> | AsyncIterable<T>,
  size: number,
): AsyncGenerator<T[], void, undefined> {
  let chunk: T[] = [];
  for await (const row of rows) {
    chunk.push(row);
    if (chunk.length === size) {
      yield chunk;
      chunk = [];
    }
  }
  if (chunk.length) yield chunk;
}
