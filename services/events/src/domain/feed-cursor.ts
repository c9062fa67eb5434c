/**
 * The feed cursor: the kit's opaque cursor for list "events" with filters
 * {types}; its position is the last sequence the reader has seen (0 = start).
 */
import { ApiError } from "@dpp/contract";
import { decodeCursor, encodeCursor } from "@dpp/kit";

export const FEED_LIST = "events";

export interface FeedFilters {
  /** Normalised (unique, sorted) type filter; empty = all types. */
  types: string[];
}

/** The sequence after which to read; 0 when no cursor was sent. */
export function readFeedCursor(filters: FeedFilters, cursor: string | undefined): number {
  const position = decodeCursor<unknown>(FEED_LIST, { types: filters.types }, cursor);
  if (position === undefined) return 0;
  if (typeof position !== "number" || !Number.isSafeInteger(position) || position < 0) {
    throw new ApiError("cursor_invalid", "The cursor is malformed; pass next_cursor exactly as received.", {
      issues: [{ source: { parameter: "cursor" }, rule: "cursor_format" }],
    });
  }
  return position;
}

export function feedCursor(filters: FeedFilters, afterSequence: number): string {
  return encodeCursor(FEED_LIST, { types: filters.types }, afterSequence);
}
