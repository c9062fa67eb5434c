/**
 * The rules of a job's rows that the service checks when it is queued. The shape of each row (its members and
 * their types) is the gateway's (gateway/module.ts); what a row's passport may hold is passport's, per row,
 * when the row is processed. No SQL, no gRPC.
 */
import { ApiError } from "@dpp/contract";

/** Rows of one job (the spec's limit; beyond it `max_rows`). */
export const MAX_ROWS = 500;
/** Row results of one GET .../imports/{id} (a whole job). */
export const MAX_ROW_LIMIT = 500;
/** Row results when row_limit is not given. */
export const DEFAULT_ROW_LIMIT = 100;

export interface RowInput {
  category: string;
  externalId?: string;
  dataJson: string;
}

/** The rows to store: 1 to 500 (validation_failed `min_rows` / `max_rows` naming /rows otherwise). */
export function checkRows(
  rows: RowInput[],
): { category: string; externalId: string | null; dataJson: string }[] {
  if (rows.length === 0)
    throw new ApiError("validation_failed", "An import needs at least one row.", {
      issues: [{ source: { pointer: "/rows" }, rule: "min_rows", message: "rows must hold 1 to 500 rows." }],
    });
  if (rows.length > MAX_ROWS)
    throw new ApiError(
      "validation_failed",
      `An import holds at most ${MAX_ROWS} rows; split the rows into jobs.`,
      {
        issues: [
          {
            source: { pointer: "/rows" },
            rule: "max_rows",
            message: `rows holds ${rows.length} rows; at most ${MAX_ROWS} per job.`,
          },
        ],
        limit: MAX_ROWS,
        requested: rows.length,
      },
    );
  return rows.map((r) => ({
    category: r.category,
    externalId: r.externalId ?? null,
    dataJson: r.dataJson === "" ? "{}" : r.dataJson,
  }));
}
