/** The variants_units schema: its tables as kysely types (this service's only). */
import type { Generated } from "kysely";
import type { OutboxTable, WithIdempotency } from "@dpp/kit";

export const VARIANTS_UNITS_SCHEMA = "variants_units";

export interface VariantTable {
  id: string;
  organization_id: string;
  livemode: boolean;
  passport_id: string;
  seq: Generated<number>;
  gtin: string;
  size: string | null;
  colour: string | null;
  pair_key: string;
  agent_key_id: string | null;
  agent_key_name: string | null;
  agent_at: Date | null;
  agent_source_class: string | null;
  created_at: Generated<Date>;
}

export interface UnitTable {
  id: string;
  organization_id: string;
  livemode: boolean;
  passport_id: string;
  seq: Generated<number>;
  unit_serial: string;
  status: string | null;
  created_at: Generated<Date>;
}

export interface UnitStatusChangeTable {
  id: string;
  organization_id: string;
  livemode: boolean;
  unit_id: string;
  seq: Generated<number>;
  from_status: string | null;
  to_status: string;
  key_id: string;
  changed_at: Generated<Date>;
}

export interface UnitReadingTable {
  id: string;
  organization_id: string;
  livemode: boolean;
  passport_id: string;
  unit_id: string;
  seq: Generated<number>;
  field: string;
  value: unknown;
  source: string;
  observed_on: string;
  note: string | null;
  document_id: string | null;
  key_id: string;
  recorded_at: Generated<Date>;
}

export interface PassportTallyTable {
  organization_id: string;
  livemode: boolean;
  passport_id: string;
  variant_count: Generated<number>;
  unit_count: Generated<number>;
}

export interface DestructiveUsageTable {
  organization_id: string;
  livemode: boolean;
  day: string;
  used: number;
}

export interface VariantsUnitsDB extends WithIdempotency {
  variant: VariantTable;
  unit: UnitTable;
  unit_status_change: UnitStatusChangeTable;
  unit_reading: UnitReadingTable;
  passport_tally: PassportTallyTable;
  destructive_usage: DestructiveUsageTable;
  outbox: OutboxTable;
}
