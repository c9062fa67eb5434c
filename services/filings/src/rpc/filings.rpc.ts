/** FilingsService: thin handlers; the rules live in ../domain and ../app, the queries in ../store. */
import { ApiError } from "@dpp/contract";
import { requireTenant, type ImplOf } from "@dpp/kit";
import { timestampFromDate, type filingsV1 } from "@dpp/proto";
import { ATTESTATION_WORDING_VERSION } from "../domain/affichage";
import { fileAffichage, readAffichage, type FilingsApp } from "../app/affichage";

export function filingsRpc(app: FilingsApp): ImplOf<typeof filingsV1.FilingsService> {
  return {
    getAffichage: async (req, { ctx }) => {
      const a = await readAffichage(app, ctx, req.passportId, delegationOf(req.delegation));
      return {
        affichage: {
          passportId: a.passportId,
          organizationId: a.organizationId,
          livemode: a.livemode,
          status: a.status,
          filedAt: a.filedAt ? timestampFromDate(a.filedAt) : undefined,
          portalGtin: a.portalGtin ?? undefined,
          portalScore: a.portalScore ?? undefined,
          filingAvailable: a.blockers.length === 0,
          blockers: a.blockers,
          delegationStatus: a.delegationStatus,
        },
      };
    },

    fileAffichage: async (req, call) => {
      const f = await fileAffichage(app, call, req.passportId, delegationOf(req.delegation));
      return {
        filing: {
          ...f,
          unchangedReason: f.unchangedReason ?? undefined,
          declaredScore: f.declaredScore ?? undefined,
          filedAt: timestampFromDate(f.filedAt),
        },
      };
    },

    recordAttestation: async (req, { ctx }) => {
      const t = requireTenant(ctx);
      const by = req.acceptedBy.trim();
      const issues = [];
      if (!by || by.length > 200)
        issues.push({
          source: { pointer: "/accepted_by" },
          rule: "required",
          message: "Name the person at the brand who accepted the attestation (1 to 200 characters).",
        });
      if (req.wordingVersion !== ATTESTATION_WORDING_VERSION)
        issues.push({
          source: { pointer: "/wording_version" },
          rule: "enum",
          message: `The current attestation wording is version ${ATTESTATION_WORDING_VERSION}.`,
        });
      if (issues.length)
        throw new ApiError("validation_failed", "The attestation cannot be recorded.", { issues });
      const row = await app.store.recordAttestation(ctx, t, by, req.wordingVersion);
      return {
        acceptedBy: row.accepted_by,
        wordingVersion: row.wording_version,
        acceptedAt: timestampFromDate(row.accepted_at),
      };
    },

    getFilingSettings: async (_req, { ctx }) => {
      const t = requireTenant(ctx);
      const a = await app.store.findAttestation(t);
      return {
        portalConfigured: app.portal !== undefined,
        attestationWordingVersion: a?.wording_version,
        attestationAcceptedBy: a?.accepted_by,
      };
    },
  };
}

function delegationOf(d: filingsV1.Delegation | undefined): { status: string; portalBrandId: string | null } {
  return { status: d?.status || "none", portalBrandId: d?.portalBrandId ?? null };
}
