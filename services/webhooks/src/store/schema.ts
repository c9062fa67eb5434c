/** The webhooks schema: its tables as kysely types (this service's only). */
import type { ColumnType, Generated } from "kysely";
import type { OutboxTable, WithIdempotency } from "@dpp/kit";

export const WEBHOOKS_SCHEMA = "webhooks";

/** bigint: read as a string by pg, written as a number. */
type BigintColumn = ColumnType<string, number | string, number | string>;

export interface EndpointTable {
  id: string;
  organization_id: string;
  livemode: boolean;
  url: string;
  description: string;
  types: string[];
  enabled: boolean;
  disabled_reason: string | null;
  secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: Date | null;
  delivered_sequence: BigintColumn;
  next_attempt_at: Generated<Date>;
  failed_attempts: Generated<number>;
  failing_since: Date | null;
  lease_owner: string | null;
  lease_until: Date | null;
  created_at: Generated<Date>;
  updated_at: Generated<Date>;
}

export interface AttemptTable {
  id: string;
  endpoint_id: string;
  organization_id: string;
  livemode: boolean;
  webhook_id: string;
  event_id: string;
  event_type: string;
  sequence: ColumnType<string | null, number | null, number | null>;
  next_cursor: string | null;
  kind: "delivery" | "redelivery" | "test";
  status: "succeeded" | "failed";
  response_status: number | null;
  error: string | null;
  latency_ms: number;
  attempted_at: Generated<Date>;
  next_retry_at: Date | null;
}

export interface WebhooksDB extends WithIdempotency {
  endpoint: EndpointTable;
  attempt: AttemptTable;
  outbox: OutboxTable;
}
