/**
 * The gateway's own API: who the key is, the organizations it reaches, grants, and what an
 * organization can do (capabilities). Served from the gateway's store (identity.repository.ts);
 * capabilities also count the organization's published passports through passport's GetUsage, the
 * only passport method this module calls.
 */
import { list } from "../../http/json";
import { KiB, type GatewayModule } from "../../http/route";
import type { ModuleFactory } from "../deps";
import type { ClientOf } from "@dpp/kit";
import type { documentsV1, filingsV1, variantsUnitsV1 } from "@dpp/proto";
import type { PassportClient } from "../passport/module";
import type { GrantTargetAccess, OrganizationAccess } from "./authenticator";
import { computeCapabilities } from "./capabilities";
import { Grants, type Grantor } from "./grants";
import type { IdentityRepository, KeyRecord } from "./identity.repository";
import { connectionJson, whoamiJson } from "./mapping";

export function identityModule(deps: {
  repo: IdentityRepository;
  /** Usage counts for capabilities. */
  passport: Pick<PassportClient, "getUsage">;
  /** The affichage filing settings (portal configured, attestation) for france_affichage_filing. */
  filings?: Pick<ClientOf<typeof filingsV1.FilingsService>, "getFilingSettings">;
  /** The library's size for document_upload's documents_used (absent: no documents service, 0). */
  documents?: Pick<ClientOf<typeof documentsV1.DocumentsService>, "getUsage">;
  /** The units of the tenant's battery passports for passport_publishing's units_used (absent: 0). */
  variantsUnits?: Pick<ClientOf<typeof variantsUnitsV1.VariantsUnitsService>, "getUnitUsage">;
}): GatewayModule {
  const { repo, passport, filings, documents, variantsUnits } = deps;
  const grants = new Grants(repo);
  return {
    name: "identity",
    routes: [
      {
        operationId: "whoami",
        method: "GET",
        path: "/whoami",
        auth: "key",
        idempotent: false,
        successStatus: 200,
        handler: async ({ key }) => ({ body: whoamiJson(key!) }),
      },
      {
        operationId: "listOrganizations",
        method: "GET",
        path: "/organizations",
        auth: "key",
        idempotent: false,
        successStatus: 200,
        handler: async ({ key }) => {
          const rows = await repo.connections(key!);
          return { body: list(rows.map(connectionJson), false, null) };
        },
      },
      {
        operationId: "createGrant",
        method: "POST",
        path: "/organizations/{organization}/grants",
        auth: "grantor",
        scope: "keys:admin",
        idempotent: false,
        bodyLimitBytes: 16 * KiB,
        successStatus: 201,
        handler: async ({ key, access, params, body }) => {
          const out = await grants.create(grantor(key, access), params.organization!, body);
          return { body: out.grant };
        },
      },
      {
        operationId: "revokeGrant",
        method: "DELETE",
        path: "/organizations/{organization}/grants/{keyId}",
        auth: "grantor",
        scope: "keys:admin",
        idempotent: false,
        successStatus: 200,
        handler: async ({ key, access, params }) => ({
          body: await grants.revoke(grantor(key, access), params.organization!, params.keyId!),
        }),
      },
      {
        operationId: "listCapabilities",
        method: "GET",
        path: "/organizations/{organization}/capabilities",
        auth: "organization",
        scope: "passports:read",
        idempotent: false,
        successStatus: 200,
        handler: async ({ ctx, key, access }) => {
          const organization = access!.organization;
          const [usage, documentsUsed, unitsUsed, hasLiveKey, affichage] = await Promise.all([
            passport.getUsage({}, { context: ctx }),
            documents ? documents.getUsage({}, { context: ctx }).then((u) => u.documentsUsed) : 0,
            variantsUnits ? variantsUnits.getUnitUsage({}, { context: ctx }).then((u) => u.unitCount) : 0,
            repo.hasUsableKey(organization.id, true),
            // Filing settings: a filings service that does not answer (or is absent) means filing does not
            // work now.
            (async () => {
              if (!filings) return undefined;
              const s = await filings.getFilingSettings({}, { context: ctx });
              return {
                portalConfigured: s.portalConfigured,
                attested: s.attestationWordingVersion !== undefined,
              };
            })().catch(() => undefined),
          ]);
          const data = computeCapabilities({
            organization,
            livemode: key!.livemode,
            publishedCount: usage.publishedCount,
            documentsUsed,
            unitsUsed,
            hasLiveKey,
            affichage: affichage ?? { portalConfigured: false, attested: false },
          });
          return { body: list(data, false, null) };
        },
      },
    ],
  };
}

/** The caller of a grant route, as resolved by the `grantor` auth mode. */
function grantor(key: KeyRecord | undefined, access: OrganizationAccess | undefined): Grantor {
  const a = access as GrantTargetAccess;
  return { organizationId: key!.organization_id, livemode: key!.livemode, role: a.role, link: a.link };
}

/** The module in the gateway's module list (index.generated.ts). Capabilities count published passports: identity is handed passport's client. */
export const fromDeps: ModuleFactory = (deps) =>
  identityModule({
    repo: deps.identity,
    passport: deps.passport,
    filings: deps.filings,
    documents: deps.documents,
    variantsUnits: deps.variantsUnits,
  });
