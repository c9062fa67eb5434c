/**
 * The event catalogue: every event type the services emit and the shape of its
 * `related` object: the types below, and each service's own file in catalogue/ (merged by
 * catalogue/index.generated.ts, which `npm run -s gen:registry` writes). Producers build events only through `domainEvent`, so an
 * event type that is not in the catalogue cannot be emitted, and the API
 * documentation lists this same table.
 */
import { newId } from "./ids";
import type { CatalogueEntry } from "./catalogue/entry";
import { SERVICE_EVENTS } from "./catalogue/index.generated";
import type { DomainEvent } from "./events";

/** `related` of passport.* events, shaped like the spec's passport.published sample. */
export interface PassportRelated {
  object: "passport";
  id: string;
  name: string;
  category: string;
  status: string;
  previous_status: string | null;
  version: number;
}

export interface DocumentRelated {
  object: "document";
  id: string;
  type: string;
  access_tier: string;
  upload_state: string;
  passport_id: string | null;
}

export interface ImportJobRelated {
  object: "import_job";
  id: string;
  name: string;
  status: string;
  total_rows: number;
  succeeded_rows: number;
  failed_rows: number;
}

export interface ProposalRelated {
  object: "passport_proposal";
  id: string;
  name: string;
  passport_id: string;
  state: string;
}

export interface AffichageRelated {
  object: "affichage";
  name: string;
  passport_id: string;
  status: string;
  portal_gtin: string | null;
}

export interface GrantRelated {
  object: "grant";
  organization_id: string;
  key_id: string;
  scopes: string[];
  status: "active" | "revoked";
}

type Entry<R> = CatalogueEntry<R>;

const PASSPORT_FIELDS = ["object", "id", "name", "category", "status", "previous_status", "version"] as const;
const DOCUMENT_FIELDS = ["object", "id", "type", "access_tier", "upload_state", "passport_id"] as const;
const IMPORT_FIELDS = [
  "object",
  "id",
  "name",
  "status",
  "total_rows",
  "succeeded_rows",
  "failed_rows",
] as const;
const PROPOSAL_FIELDS = ["object", "id", "name", "passport_id", "state"] as const;
const AFFICHAGE_FIELDS = ["object", "name", "passport_id", "status", "portal_gtin"] as const;
const GRANT_FIELDS = ["object", "organization_id", "key_id", "scopes", "status"] as const;

const passport = (description: string): Entry<PassportRelated> => ({ description, related: PASSPORT_FIELDS });

export const EVENT_CATALOGUE = {
  "passport.created": passport("A passport was created (status draft; previous_status null)."),
  "passport.updated": passport("A passport's document changed (a PATCH that changed something)."),
  "passport.published": passport("A passport was published; previous_status is the status it left."),
  "passport.unpublished": passport("A published passport was taken offline and is a draft again."),
  "passport.trashed": passport("A passport was moved to the trash."),
  "passport.restored": passport("A trashed passport was restored; it is a draft again."),
  "passport.deactivated": passport("A published passport was deactivated."),
  "passport.reactivated": passport("A deactivated passport was published again."),
  "passport.locked": passport("A passport became readonly."),
  "passport.unlocked": passport("A readonly passport became editable again."),
  "passport.deleted": passport("A test-mode passport was deleted by the retention rule."),
  "document.created": {
    description: "A document upload was created.",
    related: DOCUMENT_FIELDS,
  } as Entry<DocumentRelated>,
  "document.uploaded": {
    description: "A document's file arrived in storage.",
    related: DOCUMENT_FIELDS,
  } as Entry<DocumentRelated>,
  "document.linked": {
    description: "A document was linked to a passport.",
    related: DOCUMENT_FIELDS,
  } as Entry<DocumentRelated>,
  "document.unlinked": {
    description: "A document was unlinked from a passport.",
    related: DOCUMENT_FIELDS,
  } as Entry<DocumentRelated>,
  "import_job.created": {
    description: "A bulk import job was queued.",
    related: IMPORT_FIELDS,
  } as Entry<ImportJobRelated>,
  "import_job.completed": {
    description: "A bulk import job finished.",
    related: IMPORT_FIELDS,
  } as Entry<ImportJobRelated>,
  "proposal.created": {
    description: "A change proposal was requested.",
    related: PROPOSAL_FIELDS,
  } as Entry<ProposalRelated>,
  "proposal.withdrawn": {
    description: "A change proposal was withdrawn.",
    related: PROPOSAL_FIELDS,
  } as Entry<ProposalRelated>,
  "affichage.filed": {
    description: "A French environmental display declaration was filed.",
    related: AFFICHAGE_FIELDS,
  } as Entry<AffichageRelated>,
  "grant.created": {
    description: "A key was granted access to a client organization.",
    related: GRANT_FIELDS,
  } as Entry<GrantRelated>,
  "grant.revoked": {
    description: "A key's grant on a client organization ended.",
    related: GRANT_FIELDS,
  } as Entry<GrantRelated>,
  ...SERVICE_EVENTS,
} as const;

export type EventType = keyof typeof EVENT_CATALOGUE;

export type RelatedOf<T extends EventType> = (typeof EVENT_CATALOGUE)[T] extends Entry<infer R> ? R : never;

export function isCatalogued(type: string): type is EventType {
  return Object.prototype.hasOwnProperty.call(EVENT_CATALOGUE, type);
}

/** Builds a domain event of a catalogued type for a tenant. */
export function domainEvent<T extends EventType>(
  type: T,
  tenant: { organizationId: string; livemode: boolean },
  related: RelatedOf<T>,
  createdAt: Date | string = new Date(),
): DomainEvent {
  return {
    id: newId("evt"),
    type,
    organization_id: tenant.organizationId,
    livemode: tenant.livemode,
    created_at: new Date(createdAt).toISOString(),
    related: related as unknown as Record<string, unknown>,
  };
}

/** `related` for passport.* events. */
export function passportRelated(
  p: { organization_id: string; id: string; category: string; status: string; version: number },
  previousStatus: string | null,
): PassportRelated {
  return {
    object: "passport",
    id: p.id,
    name: `organizations/${p.organization_id}/passports/${p.id}`,
    category: p.category,
    status: p.status,
    previous_status: previousStatus,
    version: p.version,
  };
}
