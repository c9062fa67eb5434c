/** The filings schema: its tables as kysely types (this service's only). */
import type { Generated } from "kysely";
import type { OutboxTable, WithIdempotency } from "@dpp/kit";

export const FILINGS_SCHEMA = "filings";

export interface AffichageTable {
  organization_id: string;
  livemode: boolean;
  passport_id: string;
  status: string;
  filed_at: Date;
  portal_gtin: string;
  portal_score: number;
  standardized_score: number;
  durability: number;
  engine_version: string;
  /** The declaration last sent (or found recorded) at the portal. */
  declaration: unknown;
  /** How many times the portal recorded a changed declaration for the passport. */
  filings: Generated<number>;
  updated_at: Generated<Date>;
}

export interface AttestationTable {
  organization_id: string;
  livemode: boolean;
  accepted_by: string;
  wording_version: string;
  accepted_at: Generated<Date>;
}

export interface FilingsDB extends WithIdempotency {
  affichage: AffichageTable;
  attestation: AttestationTable;
  outbox: OutboxTable;
}
