/** ImportsService: thin handlers; the rules live in ../domain, the queries in ../store. */
import { ApiError } from "@dpp/contract";
import {
  assertLiveWriteAllowed,
  decodeCursor,
  page,
  pageLimit,
  requireTenant,
  type ImplOf,
  type RequestContext,
} from "@dpp/kit";
import { importsV1, timestampFromDate } from "@dpp/proto";
import { checkRows, MAX_ROW_LIMIT } from "../domain/rows";
import type { JobStatus, JobContext } from "../store/schema";
import type { ImportsStore, JobRow, JobRowRow } from "../store/store";

/** The list's name in its cursors. */
const LIST = "imports";

const STATUS: Record<JobStatus, importsV1.ImportStatus> = {
  queued: importsV1.ImportStatus.QUEUED,
  running: importsV1.ImportStatus.RUNNING,
  completed: importsV1.ImportStatus.COMPLETED,
  failed: importsV1.ImportStatus.FAILED,
};
const STATUS_OF = new Map<importsV1.ImportStatus, JobStatus>(
  Object.entries(STATUS).map(([k, v]) => [v, k as JobStatus]),
);

const ts = (d: Date | null) => (d ? timestampFromDate(d) : undefined);

export const jobMessage = (j: JobRow) => ({
  id: j.id,
  organizationId: j.organization_id,
  livemode: j.livemode,
  status: STATUS[j.status],
  totalRows: j.total_rows,
  succeededRows: j.succeeded_rows,
  failedRows: j.failed_rows,
  pendingRows: j.total_rows - j.succeeded_rows - j.failed_rows,
  attempts: j.attempts,
  createdAt: timestampFromDate(j.created_at),
  startedAt: ts(j.started_at),
  completedAt: ts(j.completed_at),
});

const rowMessage = (r: JobRowRow) => ({
  rowIndex: r.row_index,
  externalId: r.external_id ?? undefined,
  succeeded: r.status === "succeeded",
  passportId: r.passport_id ?? undefined,
  error: r.error
    ? { code: r.error.code, detail: r.error.detail, detailsJson: JSON.stringify(r.error.details ?? {}) }
    : undefined,
  processedAt: ts(r.processed_at),
});

/** What of the POST's context the rows are created under. */
function jobContext(ctx: RequestContext): JobContext {
  const c: JobContext = {};
  if (ctx.keyId !== undefined) c.keyId = ctx.keyId;
  if (ctx.credentialKind !== undefined) c.credentialKind = ctx.credentialKind;
  if (ctx.plan !== undefined) c.plan = { ...ctx.plan };
  return c;
}

export function importsRpc(
  store: ImportsStore,
  o: { queued: () => void },
): ImplOf<typeof importsV1.ImportsService> {
  return {
    createImport: async (req, { ctx }) => {
      const t = requireTenant(ctx);
      // A live import is a batch of live creates: refused as one would be, before anything is queued.
      assertLiveWriteAllowed(ctx);
      const rows = checkRows(req.rows);
      const job = await store.create(t, jobContext(ctx), rows);
      o.queued();
      return { job: jobMessage(job) };
    },

    listImports: async (req, { ctx }) => {
      const t = requireTenant(ctx);
      const limit = pageLimit(req.limit);
      const status =
        req.status === importsV1.ImportStatus.UNSPECIFIED ? undefined : STATUS_OF.get(req.status);
      const filters = { status: status ?? null };
      const after = decodeCursor<unknown>(LIST, filters, req.cursor);
      if (after !== undefined && typeof after !== "string")
        throw new ApiError(
          "cursor_invalid",
          "The cursor is malformed; pass next_cursor exactly as received.",
        );
      const p = page(await store.list(t, limit + 1, after, status), limit, {
        list: LIST,
        filters,
        position: (r) => r.id,
      });
      return { jobs: p.rows.map(jobMessage), hasMore: p.hasMore, nextCursor: p.nextCursor };
    },

    getImport: async (req, { ctx }) => {
      const t = requireTenant(ctx);
      const job = await store.get(t, req.id);
      if (!job) throw new ApiError("resource_not_found", "No import job with this id.", { id: req.id });
      const limit = Math.min(Math.max(req.rowLimit, 0), MAX_ROW_LIMIT);
      const rows = limit > 0 ? await store.processedRows(t, job.id, limit + 1, req.afterRowIndex ?? -1) : [];
      return {
        job: jobMessage(job),
        rows: rows.slice(0, limit).map(rowMessage),
        rowsHasMore: rows.length > limit,
      };
    },
  };
}
