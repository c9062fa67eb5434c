/** The filings schema: its tables as kysely types (this service's only). */
import type { Generated } from "kysely";
import type { OutboxTable, WithIdempotency } from "@dpp/kit";

export const FILINGS_SCHEMA = "filings";

export interface FilingTable {
  id: string;
  organization_id: string;
  livemode: boolean;
  label: string;
  created_at: Generated<Date>;
}

export interface FilingsDB extends WithIdempotency {
  filing: FilingTable;
  outbox: OutboxTable;
}
