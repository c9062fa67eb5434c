/** The imports schema: its tables as kysely types (this service's only). */
import type { ColumnType, Generated } from "kysely";
import type { CredentialKind, OutboxTable, WithIdempotency } from "@dpp/kit";

export const IMPORTS_SCHEMA = "imports";

export type JobStatus = "queued" | "running" | "completed" | "failed";
export type RowStatus = "pending" | "succeeded" | "failed";

/** What of the POST's signed context the rows are created under. */
export interface JobContext {
  keyId?: string;
  credentialKind?: CredentialKind;
  plan?: {
    planId: string;
    subscriptionStatus: string;
    publishLimit?: number;
    unitLimit?: number;
    documentLimit?: number;
  };
}

export interface JobTable {
  id: string;
  organization_id: string;
  livemode: boolean;
  status: JobStatus;
  total_rows: number;
  succeeded_rows: Generated<number>;
  failed_rows: Generated<number>;
  attempts: Generated<number>;
  context: ColumnType<JobContext, string, string>;
  created_at: Generated<Date>;
  started_at: Date | null;
  completed_at: Date | null;
  turn_at: Generated<Date>;
  retry_at: Date | null;
  lease_owner: string | null;
  lease_expires_at: Date | null;
}

export interface RowError {
  code: string;
  detail: string;
  details: Record<string, unknown>;
}

export interface JobRowTable {
  job_id: string;
  row_index: number;
  organization_id: string;
  livemode: boolean;
  category: string;
  external_id: string | null;
  data_json: string;
  status: Generated<RowStatus>;
  passport_id: string | null;
  error: ColumnType<RowError | null, string | null, string | null>;
  processed_at: Date | null;
}

export interface ImportsDB extends WithIdempotency {
  job: JobTable;
  job_row: JobRowTable;
  outbox: OutboxTable;
}
