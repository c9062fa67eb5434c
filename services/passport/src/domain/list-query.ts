/** The query of GET .../passports: limit, filters and the cursor that carries them. */
import { ApiError, invalidParameter } from "@dpp/contract";
import { decodeCursor, parseLimit } from "@dpp/kit";
import { findCategory } from "./categories";
import { PASSPORT_STATUSES } from "./lifecycle";

export interface ListQueryInput {
  limit: string;
  cursor: string;
  status: string;
  category: string;
  updatedSince: string;
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

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})T([01]\d|2[0-3]):[0-5]\d:[0-5]\d(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

/** An RFC 3339 timestamp (with its offset, on a day the month has), or undefined. */
export function parseRfc3339(text: string): Date | undefined {
  const m = RFC3339.exec(text);
  if (!m) return undefined;
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const calendar = new Date(Date.UTC(year, month - 1, day));
  if (calendar.getUTCMonth() !== month - 1 || calendar.getUTCDate() !== day) return undefined;
  const at = new Date(text);
  return Number.isNaN(at.getTime()) ? undefined : at;
}

/** Checks the query in the order the spec reports it: limit, status, category, updated_since, cursor. */
export function parseListQuery(req: ListQueryInput): ListQuery {
  const limit = parseLimit(req.limit);
  if (req.status && !(PASSPORT_STATUSES as readonly string[]).includes(req.status))
    throw invalidParameter("status", "enum", `status must be one of ${PASSPORT_STATUSES.join(", ")}.`);
  if (req.category && !findCategory(req.category))
    throw invalidParameter("category", "unknown_category", `${req.category} is not a category.`);
  let updatedSince: Date | undefined;
  if (req.updatedSince) {
    updatedSince = parseRfc3339(req.updatedSince);
    if (!updatedSince)
      throw invalidParameter("updated_since", "rfc3339", "updated_since must be an RFC 3339 timestamp.");
  }
  const cursorFilters = {
    status: req.status,
    category: req.category,
    updated_since: updatedSince?.toISOString(),
  };
  const after = decodeCursor<string>(PASSPORT_LIST, cursorFilters, req.cursor);
  if (after !== undefined && typeof after !== "string")
    throw new ApiError("cursor_invalid", "The cursor is malformed; pass next_cursor exactly as received.");
  return {
    limit,
    filters: { status: req.status || undefined, category: req.category || undefined, updatedSince },
    cursorFilters,
    afterId: after,
  };
}
