/** The documents schema: its tables as kysely types (this service's only). */
import type { Generated } from "kysely";
import type { OutboxTable, WithIdempotency } from "@dpp/kit";

export const DOCUMENTS_SCHEMA = "documents";

/** A document of an organization's library (one mode), and the state of its file in storage. */
export interface DocumentTable {
  id: string;
  organization_id: string;
  livemode: boolean;
  type: string;
  access_tier: string;
  file_name: string;
  display_name: string;
  mime_type: string;
  /** Declared at creation (null: not declared), then the stored size once ready. */
  file_size: string | null;
  /** pending | ready */
  upload_state: string;
  uploaded_at: Date | null;
  /** When the upload URL stops working; a pending document past it (and a grace) is removed by the sweep. */
  upload_expires_at: Date;
  /** The object's key in storage. */
  storage_key: string;
  /** Why a pending document is not ready (content_mismatch, file_too_large, empty_file); null otherwise. */
  problem_code: string | null;
  problem_message: string | null;
  created_at: Generated<Date>;
}

/** A document attached to a passport. */
export interface DocumentLinkTable {
  organization_id: string;
  livemode: boolean;
  passport_id: string;
  document_id: string;
  linked_at: Generated<Date>;
}

/**
 * A record that depends on a document of a passport: `extraction` (passport values were extracted from it) or
 * `reading` (it supports recorded battery values). Detaching the document is refused while one exists.
 */
export interface DocumentDependencyTable {
  organization_id: string;
  livemode: boolean;
  passport_id: string;
  document_id: string;
  kind: string;
  reference: string;
  created_at: Generated<Date>;
}

export interface DocumentsDB extends WithIdempotency {
  document: DocumentTable;
  document_link: DocumentLinkTable;
  document_dependency: DocumentDependencyTable;
  outbox: OutboxTable;
}
