/**
 * The query of GET .../passports: limit, filters and the cursor that carries them. The gateway checks the syntax
 * (limit, status, updated_since); these are the checks that need the categories and the cursor.
 */
import { ApiError, invalidParameter } from "@dpp/contract";
import { decodeCursor, pageLimit } from "@dpp/kit";
import { findCategory } from "./categories";
import type { PassportStatus } from "./lifecycle";

export interface ListQueryInput {
  /** 1..MAX_LIMIT; 0 means the default. */
  limit: number;
  cursor: string;
  status?: PassportStatus;
  /** Empty for every category. */
  category: string;
  updatedSince?: Date;
}

export interface ListQuery {
  limit: number;
  filters: { status?: string; category?: string; updatedSince?: Date };
  /** The filters as the cursor encodes them: a cursor is only valid with the filters it was issued for. */
  cursorFilters: { status: string; category: string; updated_since: string | undefined };
  /** The last id of the previous page. */
  afterId?: string;
}

/** The list's name in its cursors. */
export const PASSPORT_LIST = "passports";

/** Checks the query in the order the spec reports it: category, then the cursor. */
export function parseListQuery(req: ListQueryInput): ListQuery {
  const limit = pageLimit(req.limit);
  if (req.category && !findCategory(req.category))
    throw invalidParameter("category", "unknown_category", `${req.category} is not a category.`);
  const cursorFilters = {
    status: req.status ?? "",
    category: req.category,
    updated_since: req.updatedSince?.toISOString(),
  };
  const after = decodeCursor<string>(PASSPORT_LIST, cursorFilters, req.cursor);
  if (after !== undefined && typeof after !== "string")
    throw new ApiError("cursor_invalid", "The cursor is malformed; pass next_cursor exactly as received.");
  return {
    limit,
    filters: { status: req.status, category: req.category || undefined, updatedSince: req.updatedSince },
    cursorFilters,
    afterId: after,
  };
}
