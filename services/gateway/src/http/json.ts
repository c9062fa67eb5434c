/**
 * What every module's mapping shares. Each module maps its own protobuf messages to the public JSON
 * shapes (snake_case, nulls, resource names) in its mapping.ts; never send a message to express as is.
 */

import { timestampDate, type Timestamp } from "@dpp/proto";

/** A JSON text field of a message, parsed (the fallback when it is empty). */
export const parseJson = (text: string, fallback: unknown = {}) => (text ? JSON.parse(text) : fallback);

/** An optional message field: null when unset. */
export const orNull = <T>(v: T | undefined): T | null => (v === undefined ? null : v);

/** A Timestamp field as RFC 3339 UTC with milliseconds, the form of every timestamp of the interface. */
export function rfc3339(t: Timestamp | undefined): string {
  if (!t) throw new Error("a required timestamp of the message is unset");
  return timestampDate(t).toISOString();
}

/** An optional Timestamp field: RFC 3339, or null when unset. */
export const rfc3339OrNull = (t: Timestamp | undefined): string | null => (t ? rfc3339(t) : null);

/** The list envelope of every collection. */
export function list<T>(data: T[], hasMore: boolean, nextCursor: string | null) {
  return { object: "list" as const, data, has_more: hasMore, next_cursor: nextCursor };
}
