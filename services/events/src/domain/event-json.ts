/**
 * An event's public JSON, rendered once when it is appended and stored with it
 * (column `event.public_json`): the feed answers these texts as they are.
 *
 * The text is the one the API answered when it built each event from the
 * stored columns on every read (a jsonb `related`, a timestamptz `created_at`,
 * read through node-postgres into a message and mapped by the gateway):
 *
 *   {"object":"event","id":…,"name":"organizations/<org>/events/<id>",
 *    "organization_id":…,"type":…,"livemode":…,"created_at":…,"related":…}
 *
 * - `created_at`: the instant Postgres stores for the text (fractional seconds
 *   rounded to microseconds as Postgres rounds them), truncated to milliseconds,
 *   as RFC 3339 UTC (`Date.prototype.toISOString`).
 * - `related`: the object in jsonb's key order (shorter keys first, then by
 *   their UTF-8 bytes), as a JavaScript object holding it enumerates it (keys
 *   that are array indices first, ascending), numbers and strings as
 *   JSON.stringify writes them.
 *
 * The migration that added the column renders the rows stored before with SQL
 * built to give the same text (migrations/0003_public_json.ts); the events
 * integration tests compare the two.
 */
import type { DomainEvent } from "@dpp/contract";

const CREATED_AT = /^(\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?([Zz]|[+-]\d{2}:\d{2})$/;

/**
 * A created_at JavaScript cannot read. It carries SQLSTATE 22007 (invalid
 * datetime format) so the consumer treats it as Postgres' own refusal of such a
 * value: the event is refused, never retried.
 */
export class UnreadableCreatedAt extends Error {
  readonly code = "22007";
  constructor(value: string) {
    super(`created_at ${JSON.stringify(value)} is not an RFC 3339 date-time`);
  }
}

/** C's rint: the nearest integer, ties to even (Postgres rounds fractional seconds with it). */
function rint(x: number): number {
  const r = Math.round(x);
  return r - x === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

/** The stored instant of an RFC 3339 text, as the feed writes it (see the header). */
export function feedTimestamp(value: string): string {
  const m = CREATED_AT.exec(value);
  const whole = m ? Date.parse(`${m[1]}${m[3]}`.toUpperCase()) : NaN;
  if (!m || Number.isNaN(whole)) throw new UnreadableCreatedAt(value);
  // Postgres: rint(strtod(".fff") * 1e6) microseconds; node-postgres keeps whole milliseconds of them.
  const micros = m[2] ? rint(Number(`0.${m[2]}`) * 1_000_000) : 0;
  const date = new Date(whole + Math.floor(micros / 1000));
  if (Number.isNaN(date.getTime())) throw new UnreadableCreatedAt(value);
  return date.toISOString();
}

const utf8 = (s: string) => Buffer.from(s, "utf8");

/** jsonb's order of object keys: by UTF-8 length, then bytewise. */
function jsonbKeyOrder(a: string, b: string): number {
  const x = utf8(a);
  const y = utf8(b);
  return x.length - y.length || Buffer.compare(x, y);
}

/** A parsed JSON value with its objects' keys inserted in jsonb's order. */
function inJsonbOrder(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(inJsonbOrder);
  if (v === null || typeof v !== "object") return v;
  const source = v as Record<string, unknown>;
  // No prototype: a key "__proto__" is an ordinary key, as JSON.parse makes it.
  const out: Record<string, unknown> = Object.create(null);
  for (const k of Object.keys(source).sort(jsonbKeyOrder)) out[k] = inJsonbOrder(source[k]);
  return out;
}

/**
 * The event's public JSON text. `relatedText` is JSON.stringify(e.related), the text the jsonb column is
 * written from (passed when the caller has it already).
 */
export function eventPublicJson(e: DomainEvent, relatedText: string = JSON.stringify(e.related)): string {
  return JSON.stringify({
    object: "event",
    id: e.id,
    name: `organizations/${e.organization_id}/events/${e.id}`,
    organization_id: e.organization_id,
    type: e.type,
    livemode: e.livemode,
    created_at: feedTimestamp(e.created_at),
    related: inJsonbOrder(JSON.parse(relatedText)),
  });
}
