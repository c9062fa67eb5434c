/** The `events` schema, as Kysely sees it. Describes this service's schema only. */
import type { ColumnType, Generated } from "kysely";

export interface EventTable {
  organization_id: string;
  livemode: boolean;
  /** Position in the (organization, mode) feed: 1, 2, 3 ... in commit order. int8 reads as number (kit). */
  sequence: number;
  event_id: string;
  type: string;
  /** Written as RFC 3339 text, read as Date. */
  created_at: ColumnType<Date, string, never>;
  /** jsonb: written as JSON text, read as the parsed object. */
  related: ColumnType<Record<string, unknown>, string, never>;
  received_at: Generated<Date>;
  /** The event's public JSON text, rendered when it was appended (src/domain/event-json.ts); read as it is. */
  public_json: ColumnType<string, string, never>;
}

export interface FeedCounterTable {
  organization_id: string;
  livemode: boolean;
  last_sequence: number;
}

export interface EventsDB {
  event: EventTable;
  feed_counter: FeedCounterTable;
}

export const EVENTS_SCHEMA = "events";
