import type { OutboxTable } from "@dpp/kit";
import type { ColumnType, Generated } from "kysely";

/** The `gateway` schema, and nothing else. */
type Timestamp = ColumnType<Date, Date | string | undefined, Date | string>;
type NullableTimestamp = ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;

export interface OrganizationTable {
  id: string;
  name: string;
  plan_id: Generated<string>;
  subscription_status: Generated<string>;
  created_at: Generated<Date>;
  affichage_delegation_status: Generated<"none" | "pending" | "active" | "revoked">;
  affichage_portal_brand_id: string | null;
  affichage_delegated_at: NullableTimestamp;
}

export interface ApiKeyTable {
  id: string;
  organization_id: string;
  livemode: boolean;
  kind: "secret" | "connector";
  name: string;
  scopes: string[];
  secret_digest: string;
  last4: string;
  created_at: Generated<Date>;
  expires_at: NullableTimestamp;
  revoked_at: NullableTimestamp;
  rotated_at: NullableTimestamp;
  rotation_overlap_ends_at: NullableTimestamp;
  replaced_by_key_id: string | null;
}

export interface ManagedLinkTable {
  manager_organization_id: string;
  client_organization_id: string;
  status: "accepted" | "ended";
  france_mandate_confirmed_at: NullableTimestamp;
  created_at: Generated<Date>;
  ended_at: NullableTimestamp;
}

export interface GrantTable {
  key_id: string;
  organization_id: string;
  scopes: string[];
  granted_at: Generated<Date>;
  revoked_at: NullableTimestamp;
}

/** A person of an organization who signs in to the review page (migration 0006). */
export interface PersonTable {
  id: string;
  organization_id: string;
  email: string;
  name: string;
  /** scrypt$<salt hex>$<hash hex> */
  password_hash: string;
  created_at: Generated<Date>;
}

export interface ReviewSessionTable {
  /** SHA-256 hex of the cookie value. */
  digest: string;
  person_id: string;
  csrf_token: string;
  created_at: Generated<Date>;
  expires_at: Date;
}

/**
 * An authority token (migration 0007, docs/decisions/0058): an inspector's read of one organization's
 * authority-tier files, in one mode, until it expires or is revoked.
 */
export interface AuthorityTokenTable {
  id: string;
  organization_id: string;
  livemode: boolean;
  /** Who holds it (the authority and the inspector), for the operator. */
  name: string;
  secret_digest: string;
  last4: string;
  created_at: Generated<Date>;
  expires_at: Date;
  revoked_at: NullableTimestamp;
}

export interface GatewayDB {
  authority_token: AuthorityTokenTable;
  person: PersonTable;
  review_session: ReviewSessionTable;
  organization: OrganizationTable;
  api_key: ApiKeyTable;
  managed_link: ManagedLinkTable;
  grant: GrantTable;
  outbox: OutboxTable;
}

export type { Timestamp };
