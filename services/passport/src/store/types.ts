/** The rows the store returns and the values it takes. */
import type { Selectable } from "kysely";
import type { PassportTable, ProposalTable, PublishApprovalTable } from "./schema";

export type PassportRow = Selectable<PassportTable>;
export type ProposalRow = Selectable<ProposalTable>;
export type PublishApprovalRow = Selectable<PublishApprovalTable>;

/** The tenant key every query filters on (a request's TenantContext is one). */
export interface Tenant {
  organizationId: string;
  livemode: boolean;
}

/** A unique constraint refused a write. `external_id`: another passport of the tenant has this external_id. */
export class UniqueConflict extends Error {
  constructor(readonly key: "external_id") {
    super(`unique constraint on ${key}`);
    this.name = "UniqueConflict";
  }
}

export interface NewPassportRow {
  id: string;
  category: string;
  gtin: string | null;
  serial_number: string | null;
  external_id: string | null;
  data: Record<string, unknown>;
}

/** The columns a write may set; version and updated_at are the store's to move. "now": the transaction's time. */
export interface PassportChange {
  data?: Record<string, unknown>;
  gtin?: string | null;
  serial_number?: string | null;
  external_id?: string | null;
  status?: string;
  published_at?: "now";
  trashed_at?: "now" | null;
}

export interface ListFilters {
  status?: string;
  category?: string;
  updatedSince?: Date;
}

export interface ClaimRow {
  gtin: string;
  passport_id: string;
  role: "lead" | "variant";
  owner_id: string;
}

/** A GTIN claim with the holding passport's product_name (null when it has none). */
export interface ClaimHolder extends ClaimRow {
  product_name: string | null;
}

export interface NewPublishApproval {
  id: string;
  passport_id: string;
  passport_version: number;
  requested_by_key_id: string | null;
  variant_review_fingerprint: string | null;
}

export interface NewValidation {
  id: string;
  passport_id: string;
  passport_version: number;
  valid: boolean;
  publishable: boolean;
  /** Stored as jsonb. */
  record: object;
  checked_at: Date;
}

export interface NewProposal {
  id: string;
  passport_id: string;
  passport_version: number;
  fields: Record<string, unknown>;
  base: Record<string, unknown>;
  requested_by_key_id: string | null;
  /** expires_at is requested_at (the transaction's time) plus this many days. */
  lifetime_days: number;
}
