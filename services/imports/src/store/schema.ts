/** The imports schema: its tables as kysely types (this service's only). */
import type { Generated } from "kysely";
import type { OutboxTable, WithIdempotency } from "@dpp/kit";

export const IMPORTS_SCHEMA = "imports";

export interface ImportTable {
  id: string;
  organization_id: string;
  livemode: boolean;
  label: string;
  created_at: Generated<Date>;
}

export interface ImportsDB extends WithIdempotency {
  import: ImportTable;
  outbox: OutboxTable;
}
