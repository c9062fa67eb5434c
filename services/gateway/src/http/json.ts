/**
 * What every module's mapping shares. Each module maps its own protobuf messages to the public JSON
 * shapes (snake_case, nulls, resource names) in its mapping.ts; never send a message to express as is.
 */

import { timestampDate, type Timestamp } from "@dpp/proto";

/** A JSON text field of a message, parsed (the fallback when it is empty). */
export const parseJson = (text: string, fallback: unknown = {}) => (text ? JSON.parse(text) : fallback);

/** An optional message field: null when unset. */
export const orNull = <T>(v: T | undefined): T | null => (v === undefined ? null : v);

/** The last timestamp rendered: the rows of a batch, which share their time, render it once. */
let lastRendered: { seconds: bigint; nanos: number; text: string } | undefined;

/** A Timestamp field as RFC 3339 UTC with milliseconds, the form of every timestamp of the interface. */
export function rfc3339(t: Timestamp | undefined): string {
  if (!t) throw new Error("a required timestamp of the message is unset");
  if (lastRendered?.seconds === t.seconds && lastRendered.nanos === t.nanos) return lastRendered.text;
  const text = timestampDate(t).toISOString();
  lastRendered = { seconds: t.seconds, nanos: t.nanos, text };
  return text;
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

/**
 * A JSON document held as UTF-8 bytes, sent as they are: a service's answer placed in the body without ever
 * becoming a JavaScript string (no decoding, no encoding back). As for RawJson, only bytes that are JSON by
 * construction belong here.
 */
export class RawJsonBytes {
  constructor(readonly bytes: Uint8Array) {}
}

/** The JSON text of an answer's body (a RawJsonBytes is decoded: for tests and logs, not for sending). */
export const jsonText = (body: unknown): string =>
  body instanceof RawJson
    ? body.text
    : body instanceof RawJsonBytes
      ? Buffer.from(body.bytes.buffer, body.bytes.byteOffset, body.bytes.byteLength).toString("utf8")
      : JSON.stringify(body);

/** What is sent for an answer's body: a RawJsonBytes's bytes as they are, otherwise its JSON text. */
export const jsonBody = (body: unknown): string | Uint8Array =>
  body instanceof RawJsonBytes ? body.bytes : jsonText(body);

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

const LIST_HEAD = Buffer.from('{"object":"list","data":');

/**
 * The list envelope of `list` around `data`, the UTF-8 bytes of a JSON array text (a whole page rendered
 * upstream), placed as they are: one copy into the body, no string.
 */
export function rawListBytes(data: Uint8Array, hasMore: boolean, nextCursor: string | null): RawJsonBytes {
  const tail = Buffer.from(`,"has_more":${hasMore},"next_cursor":${JSON.stringify(nextCursor)}}`);
  return new RawJsonBytes(Buffer.concat([LIST_HEAD, data, tail]));
}
