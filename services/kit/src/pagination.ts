import { createHash } from "node:crypto";
import { ApiError, invalidParameter } from "@dpp/contract";

/** Default and maximum page size of every list (documented in the OpenAPI description). */
export const DEFAULT_LIMIT = 20;
export const MAX_LIMIT = 100;

/** Parses the `limit` query value: an integer 1..MAX_LIMIT; empty means the default. */
export function parseLimit(raw: string | undefined): number {
  if (raw === undefined || raw === "") return DEFAULT_LIMIT;
  if (!/^\d{1,6}$/.test(raw)) throw invalidParameter("limit", "integer", "limit must be an integer.");
  const n = Number(raw);
  if (n < 1 || n > MAX_LIMIT)
    throw invalidParameter("limit", "range", `limit must be between 1 and ${MAX_LIMIT}.`);
  return n;
}

type Filters = Record<string, string | number | boolean | string[] | null | undefined>;

function fingerprint(list: string, filters: Filters): string {
  const canonical = Object.keys(filters)
    .sort()
    .map((k) => {
      const v = filters[k];
      return [k, Array.isArray(v) ? [...v].sort() : (v ?? null)];
    });
  return createHash("sha256")
    .update(JSON.stringify([list, canonical]))
    .digest("base64url")
    .slice(0, 16);
}

/**
 * Opaque cursors that encode their list, their position and their filters.
 * A cursor sent to another list or with other filters is cursor_invalid.
 */
export function encodeCursor(list: string, filters: Filters, position: unknown): string {
  return Buffer.from(JSON.stringify({ l: list, f: fingerprint(list, filters), p: position })).toString(
    "base64url",
  );
}

export function decodeCursor<P>(list: string, filters: Filters, cursor: string | undefined): P | undefined {
  if (cursor === undefined || cursor === "") return undefined;
  let parsed: { l?: unknown; f?: unknown; p?: unknown };
  try {
    if (!/^[A-Za-z0-9_-]+$/.test(cursor)) throw new Error("alphabet");
    parsed = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"));
  } catch {
    throw new ApiError("cursor_invalid", "The cursor is malformed; pass next_cursor exactly as received.", {
      issues: [{ source: { parameter: "cursor" }, rule: "cursor_format" }],
    });
  }
  if (parsed?.l !== list || parsed.p === undefined) {
    throw new ApiError("cursor_invalid", "The cursor belongs to another list.", {
      issues: [{ source: { parameter: "cursor" }, rule: "cursor_list" }],
    });
  }
  if (parsed.f !== fingerprint(list, filters)) {
    throw new ApiError(
      "cursor_invalid",
      "The cursor was issued for different filters; send the same filters as the request that returned it.",
      { issues: [{ source: { parameter: "cursor" }, rule: "cursor_filters" }] },
    );
  }
  return parsed.p as P;
}

/** The page size a list call asks for: 1..MAX_LIMIT (a larger one is cut); 0 (unset) means DEFAULT_LIMIT. */
export function pageLimit(requested: number): number {
  return requested > 0 ? Math.min(requested, MAX_LIMIT) : DEFAULT_LIMIT;
}

/** One page of a list: its rows, whether more follow, and the cursor of the next page ("" when none). */
export interface Page<Row> {
  rows: Row[];
  hasMore: boolean;
  nextCursor: string;
}

/**
 * The page out of the rows a list query read with `limit + 1` (the extra row only tells that more follow): the
 * first `limit` rows, and, when more follow, the cursor of list `next.list` with its filters, positioned at the
 * last row returned (`next.position`, read back by decodeCursor). Without `next`, nextCursor is always "".
 */
export function page<Row>(
  fetched: readonly Row[],
  limit: number,
  next?: { list: string; filters: Filters; position: (last: Row) => unknown },
): Page<Row> {
  const hasMore = fetched.length > limit;
  const rows = hasMore ? fetched.slice(0, limit) : [...fetched];
  const last = rows[rows.length - 1];
  return {
    rows,
    hasMore,
    nextCursor:
      hasMore && next && last !== undefined ? encodeCursor(next.list, next.filters, next.position(last)) : "",
  };
}
