/**
 * The gateway's routes of the filings service (this file runs in the gateway: it is listed by
 * services/gateway/src/modules/index.generated.ts). Each handler reads the request, calls one method and maps
 * the answer to the public JSON of openapi.yaml. The organization's delegation on the portal is state the
 * gateway keeps with the organization (admin CLI `org:delegation`), read from the organization the gateway's
 * authentication resolved; it travels in the request, and a filing also checks it against the portal at call
 * time.
 */
import type { ClientOf } from "@dpp/kit";
import type { filingsV1, passportV1 } from "@dpp/proto";
import {
  KiB,
  noBody,
  orNull,
  rfc3339,
  rfc3339OrNull,
  type GatewayModule,
  type HandlerInput,
  type ModuleDeps,
  type ModuleFactory,
} from "@dpp/gateway/modules";

export type FilingsClient = ClientOf<typeof filingsV1.FilingsService>;

const affichageName = (organizationId: string, passportId: string) =>
  `organizations/${organizationId}/passports/${passportId}/affichage`;

export const affichageJson = (a: filingsV1.Affichage) => ({
  object: "affichage" as const,
  name: affichageName(a.organizationId, a.passportId),
  organization_id: a.organizationId,
  passport_id: a.passportId,
  livemode: a.livemode,
  status: a.status,
  filed_at: rfc3339OrNull(a.filedAt),
  portal_gtin: orNull(a.portalGtin),
  portal_score: orNull(a.portalScore),
  filing_available: a.filingAvailable,
  blockers: a.blockers,
  delegation_status: a.delegationStatus,
});

export const affichageFilingJson = (f: filingsV1.AffichageFiling) => ({
  object: "affichage" as const,
  name: affichageName(f.organizationId, f.passportId),
  organization_id: f.organizationId,
  passport_id: f.passportId,
  livemode: f.livemode,
  changed: f.changed,
  unchanged_reason: orNull(f.unchangedReason),
  status: f.status,
  filed_at: rfc3339(f.filedAt),
  portal_gtin: f.portalGtin,
  portal_score: f.portalScore,
  standardized_score: f.standardizedScore,
  durability: f.durability,
  official_label_url: f.officialLabelUrl,
  engine_version: f.engineVersion,
  declared_score: orNull(f.declaredScore),
  free_offer: f.freeOffer,
});

/** A connector's publish recorded for a person to approve; kept by passport, which publishes on approval. */
export const publishApprovalJson = (a: passportV1.PublishApproval) => ({
  object: "publish_approval" as const,
  id: a.id,
  name: `organizations/${a.organizationId}/publish-approvals/${a.id}`,
  organization_id: a.organizationId,
  passport_id: a.passportId,
  passport: `organizations/${a.organizationId}/passports/${a.passportId}`,
  passport_version: a.passportVersion,
  state: a.state,
  variant_review_fingerprint: orNull(a.variantReviewFingerprint),
  review_url: a.reviewUrl,
  requested_at: rfc3339(a.requestedAt),
  livemode: a.livemode,
});

export function filingsModule(deps: {
  client: FilingsClient;
  passport: Pick<ModuleDeps["passport"], "getPublishApproval">;
}): GatewayModule {
  const { client, passport } = deps;
  /** The organization's delegation as its record (resolved by the gateway's authentication) holds it. */
  const delegation = (access: HandlerInput["access"]) => ({
    status: access?.organization.affichage_delegation_status ?? "none",
    portalBrandId: access?.organization.affichage_portal_brand_id ?? undefined,
  });
  return {
    name: "filings",
    routes: [
      {
        operationId: "getAffichage",
        method: "GET",
        path: "/organizations/{organization}/passports/{id}/affichage",
        auth: "organization",
        scope: "passports:read",
        idempotent: false,
        successStatus: 200,
        handler: async ({ ctx, params, access }) => {
          const res = await client.getAffichage(
            { passportId: params.id!, delegation: delegation(access) },
            { context: ctx },
          );
          return { body: affichageJson(res.affichage!) };
        },
      },
      {
        operationId: "fileAffichage",
        method: "POST",
        path: "/organizations/{organization}/passports/{id}/affichage",
        auth: "organization",
        scope: "filings:write",
        idempotent: true,
        bodyLimitBytes: 1 * KiB,
        successStatus: 200,
        handler: async ({ ctx, params, body, access }) => {
          noBody(body);
          const res = await client.fileAffichage(
            { passportId: params.id!, delegation: delegation(access) },
            { context: ctx },
          );
          return { body: affichageFilingJson(res.filing!) };
        },
      },
      {
        operationId: "getPublishApproval",
        method: "GET",
        path: "/organizations/{organization}/publish-approvals/{id}",
        auth: "organization",
        scope: "passports:read",
        idempotent: false,
        successStatus: 200,
        handler: async ({ ctx, params }) => {
          const res = await passport.getPublishApproval({ id: params.id! }, { context: ctx });
          return { body: publishApprovalJson(res.approval!) };
        },
      },
    ],
  };
}

/** The module in the gateway's module list. */
export const fromDeps: ModuleFactory = (deps) =>
  filingsModule({ client: deps.filings, passport: deps.passport });
