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

export interface ProposalRelated {
  object: "passport_proposal";
  id: string;
  name: string;
  passport_id: string;
  state: string;
}

export interface PublishApprovalRelated {
  object: "publish_approval";
  id: string;
  name: string;
  passport_id: string;
  state: string;
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
const PROPOSAL_FIELDS = ["object", "id", "name", "passport_id", "state"] as const;
const PUBLISH_APPROVAL_FIELDS = ["object", "id", "name", "passport_id", "state"] as const;
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
  "proposal.created": {
    description: "A change proposal was requested.",
    related: PROPOSAL_FIELDS,
  } as Entry<ProposalRelated>,
  "proposal.withdrawn": {
    description: "A change proposal was withdrawn by the connector that made it.",
    related: PROPOSAL_FIELDS,
  } as Entry<ProposalRelated>,
  "proposal.accepted": {
    description:
      "A person accepted a change proposal; its fields were applied to the passport (a passport.updated for the same change).",
    related: PROPOSAL_FIELDS,
  } as Entry<ProposalRelated>,
  "proposal.rejected": {
    description: "A person rejected a change proposal; the passport is unchanged.",
    related: PROPOSAL_FIELDS,
  } as Entry<ProposalRelated>,
  "publish_approval.approved": {
    description:
      "A person approved a connector's publish on the review page; the passport was published (a passport.published for it).",
    related: PUBLISH_APPROVAL_FIELDS,
  } as Entry<PublishApprovalRelated>,
  "publish_approval.rejected": {
    description: "A person rejected a connector's publish on the review page; nothing was published.",
    related: PUBLISH_APPROVAL_FIELDS,
  } as Entry<PublishApprovalRelated>,
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
