import type { ColumnType, Generated } from "kysely";
import type { IdempotencyTable, OutboxTable } from "@dpp/kit";

/** The `passport` schema, and nothing else. */
export interface PassportTable {
  organization_id: string;
  livemode: boolean;
  id: string;
  category: string;
  status: string;
  gtin: string | null;
  serial_number: string | null;
  external_id: string | null;
  version: Generated<number>;
  registry_id: string | null;
  /** jsonb: written as JSON text, read as an object. */
  data: ColumnType<Record<string, unknown>, string, string>;
  created_at: Generated<Date>;
  updated_at: Generated<Date>;
  published_at: Date | null;
  trashed_at: Date | null;
}

export interface GtinClaimTable {
  organization_id: string;
  livemode: boolean;
  gtin: string;
  passport_id: string;
  role: "lead" | "variant";
  owner_id: string;
  created_at: Generated<Date>;
}

export interface PublishApprovalTable {
  organization_id: string;
  livemode: boolean;
  id: string;
  passport_id: string;
  passport_version: number;
  requested_by_key_id: string | null;
  variant_review_fingerprint: string | null;
  state: Generated<string>;
  created_at: Generated<Date>;
  decided_at: Date | null;
  /** Who decided: `person:<id>` of the review page. */
  decided_by: string | null;
}

/** A change proposal on a published passport (decision 0057). */
export interface ProposalTable {
  organization_id: string;
  livemode: boolean;
  id: string;
  passport_id: string;
  /** The passport's version when the proposal was made. */
  passport_version: number;
  /** jsonb: the merge patch as proposed ({data?, external_id?}). */
  fields: ColumnType<Record<string, unknown>, string, string>;
  /** jsonb: for each proposed field name, the passport's value when proposed (null: absent). */
  base: ColumnType<Record<string, unknown>, string, string>;
  /** Stored: pending, withdrawn, accepted, rejected (out_of_date and expired are seen on read). */
  state: Generated<string>;
  requested_by_key_id: string | null;
  requested_at: Generated<Date>;
  expires_at: Date;
  decided_at: Date | null;
  decided_by: string | null;
}

export interface ValidationTable {
  organization_id: string;
  livemode: boolean;
  id: string;
  passport_id: string;
  passport_version: number;
  valid: boolean;
  publishable: boolean;
  /** jsonb: the validation record as answered. */
  record: ColumnType<Record<string, unknown>, string, string>;
  checked_at: Generated<Date>;
}

/** Publish slots used per tenant, kept by a trigger on passport (migration 0005). */
export interface PublishSlotUsageTable {
  organization_id: string;
  livemode: boolean;
  used: number;
}

export interface PassportDB {
  passport: PassportTable;
  gtin_claim: GtinClaimTable;
  publish_approval: PublishApprovalTable;
  proposal: ProposalTable;
  validation: ValidationTable;
  publish_slot_usage: PublishSlotUsageTable;
  outbox: OutboxTable;
  idempotency: IdempotencyTable;
}
