/**
 * What every module's mapping shares. Each module maps its own protobuf messages to the public JSON
 * shapes (snake_case, nulls, resource names) in its mapping.ts; never send a message to express as is.
 */

/** A JSON text field of a message, parsed (the fallback when it is empty). */
export const parseJson = (text: string, fallback: unknown = {}) => (text ? JSON.parse(text) : fallback);

/** An optional message field: null when unset. */
export const orNull = <T>(v: T | undefined): T | null => (v === undefined ? null : v);

/** The list envelope of every collection. */
export function list<T>(data: T[], hasMore: boolean, nextCursor: string | null) {
  return { object: "list" as const, data, has_more: hasMore, next_cursor: nextCursor };
}
