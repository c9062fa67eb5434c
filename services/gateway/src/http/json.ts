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

/**
 * A JSON text sent as it is: a representation rendered once upstream (e.g. an event's public JSON, stored when
 * it was appended) or a document a service keeps as JSON text, placed in an answer without parsing it again.
 * Only text that is JSON by construction (a service's answer, never client input) belongs here.
 */
export class RawJson {
  constructor(readonly text: string) {}
}

/** The JSON text of an answer's body. */
export const jsonText = (body: unknown): string =>
  body instanceof RawJson ? body.text : JSON.stringify(body);

/** `fields` as a JSON object with `key` appended last, its value the JSON text `raw` as it is. */
export function withRawField(fields: Record<string, unknown>, key: string, raw: string): RawJson {
  const head = JSON.stringify(fields);
  const sep = head === "{}" ? "" : ",";
  return new RawJson(`${head.slice(0, -1)}${sep}${JSON.stringify(key)}:${raw}}`);
}

/** The list envelope of `list`, its items JSON texts placed as they are. */
export function rawList(items: readonly RawJson[], hasMore: boolean, nextCursor: string | null): RawJson {
  const data = items.map((i) => i.text).join(",");
  return new RawJson(
    `{"object":"list","data":[${data}],"has_more":${hasMore},"next_cursor":${JSON.stringify(nextCursor)}}`,
  );
}
