/**
 * Reading and filing a passport's affichage declaration. A filing runs under the kit's keyed-call contract: the
 * portal is called in one `once` effect, so at most once per Idempotency-Key whatever retries and races happen;
 * and the effect first asks the portal whether this declaration is already recorded, so a retry under a NEW key
 * after an unknown outcome (portal_unavailable) never files twice.
 */
import { ApiError, domainEvent } from "@dpp/contract";
import { once, requireTenant, type ClientOf, type RequestContext, type TenantContext } from "@dpp/kit";
import { passportV1 } from "@dpp/proto";
import {
  blockersOf,
  declarationOf,
  entitlementOf,
  portalGtin,
  sameDeclaration,
  type PassportView,
} from "../domain/affichage";
import { PortalUnavailable, type Declaration, type DeclaredProduct, type PortalPort } from "../portal/port";
import type { FilingsStore } from "../store/store";

export interface FilingsApp {
  store: FilingsStore;
  passport: ClientOf<typeof passportV1.PassportService>;
  /** Undefined when no portal is configured (PORTAL_BASE_URL unset). */
  portal: PortalPort | undefined;
  /** Wakes the outbox relay after a write that carried an event. */
  onCommitted: () => void;
}

export interface DelegationInput {
  status: string;
  portalBrandId: string | null;
}

const STATUS_NAMES: Record<number, string> = {
  [passportV1.PassportStatus.DRAFT]: "draft",
  [passportV1.PassportStatus.PUBLISHED]: "published",
  [passportV1.PassportStatus.DEACTIVATED]: "deactivated",
  [passportV1.PassportStatus.TRASHED]: "trashed",
  [passportV1.PassportStatus.READONLY]: "readonly",
};

/** The passport, read from its owner as the caller (a passport of another tenant is not found). */
async function readPassport(app: FilingsApp, ctx: RequestContext, id: string): Promise<PassportView> {
  // A read: the call's Idempotency-Key stays with the filing.
  const { idempotency: _key, outcome: _o, ...readCtx } = ctx;
  const res = await app.passport.getPassport({ id }, { context: readCtx });
  const p = res.passport!;
  return {
    id: p.id,
    status: STATUS_NAMES[p.status] ?? "unknown",
    category: p.category,
    gtin: p.gtin ?? null,
    data: (p.dataJson ? JSON.parse(p.dataJson) : {}) as Record<string, unknown>,
  };
}

export interface AffichageRead {
  passportId: string;
  organizationId: string;
  livemode: boolean;
  status: "not_filed" | "filed";
  filedAt: Date | null;
  portalGtin: string | null;
  portalScore: number | null;
  blockers: string[];
  delegationStatus: string;
}

export async function readAffichage(
  app: FilingsApp,
  ctx: RequestContext,
  passportId: string,
  delegation: DelegationInput,
): Promise<AffichageRead> {
  const t = requireTenant(ctx);
  const passport = await readPassport(app, ctx, passportId);
  const [row, attestation] = await Promise.all([
    app.store.findAffichage(t, passport.id),
    app.store.findAttestation(t),
  ]);
  return {
    passportId: passport.id,
    organizationId: t.organizationId,
    livemode: t.livemode,
    status: row ? "filed" : "not_filed",
    filedAt: row?.filed_at ?? null,
    portalGtin: row?.portal_gtin ?? null,
    portalScore: row?.portal_score ?? null,
    blockers: blockersOf({
      livemode: t.livemode,
      passport,
      delegationStatus: delegation.portalBrandId ? delegation.status : "none",
      attested: attestation !== undefined,
      entitlement: entitlementOf(ctx.plan),
      portalConfigured: app.portal !== undefined,
    }),
    delegationStatus: delegation.status,
  };
}

export interface AffichageFiled {
  passportId: string;
  organizationId: string;
  livemode: boolean;
  changed: boolean;
  unchangedReason: string | null;
  status: "filed";
  filedAt: Date;
  portalGtin: string;
  portalScore: number;
  standardizedScore: number;
  durability: number;
  officialLabelUrl: string;
  engineVersion: string;
  declaredScore: number | null;
  freeOffer: boolean;
}

/** What the portal effect found or did, recorded with the call's key. */
type PortalOutcome =
  | { kind: "declared"; product: DeclaredProduct }
  | { kind: "found"; product: DeclaredProduct }
  | { kind: "already_declared"; product: DeclaredProduct }
  | { kind: "delegation_refused" }
  | { kind: "unavailable"; reason: string };

/** The engine's name is replaced by the word engine (the spec); the portal reports a version. */
const engineVersion = (v: string) => `engine ${v}`;

export async function fileAffichage(
  app: FilingsApp,
  call: { ctx: RequestContext; deadline: number },
  passportId: string,
  delegation: DelegationInput,
): Promise<AffichageFiled> {
  const { ctx } = call;
  const t = requireTenant(ctx);
  if (!t.livemode)
    throw new ApiError(
      "test_mode_refused",
      "Filings are made with live credentials only: test mode never reaches the portal.",
      { passport_id: passportId, livemode: false },
    );
  const entitlement = entitlementOf(ctx.plan);
  if (entitlement === "unavailable")
    throw new ApiError(
      "entitlement_unavailable",
      "The organization's entitlement to filing could not be confirmed (its subscription is not in good standing); nothing was filed.",
      { passport_id: passportId, subscription_status: ctx.plan?.subscriptionStatus ?? null },
      { "Retry-After": "60" },
    );
  const passport = await readPassport(app, ctx, passportId);
  if (passport.status !== "published")
    throw new ApiError(
      "wrong_status",
      `Only a published passport is filed; this one is ${passport.status}.`,
      {
        passport_id: passport.id,
        status: passport.status,
        allowed_statuses: ["published"],
      },
    );
  if (!passport.gtin)
    throw new ApiError("gtin_required", "The passport needs a GTIN before it can be filed.", {
      passport_id: passport.id,
      pointer: "/data/gtin",
    });
  const converted = portalGtin(passport.gtin);
  if ("refused" in converted)
    throw new ApiError("gtin_required", converted.refused, {
      passport_id: passport.id,
      gtin: passport.gtin,
      reason: "no_gtin13_form",
    });
  const attestation = await app.store.findAttestation(t);
  if (!attestation)
    throw new ApiError(
      "attestation_required",
      "A named person at the brand must accept the filing attestation before the platform files for it.",
      { passport_id: passport.id, attestation_wording_version: "2026-01" },
    );
  if (delegation.status !== "active" || !delegation.portalBrandId)
    throw new ApiError(
      "delegation_required",
      `Filing needs an active delegation from the brand to the platform on the portal; it is ${delegation.status}.`,
      { passport_id: passport.id, delegation_status: delegation.status, checked: "record" },
    );
  const portal = app.portal;
  if (!portal)
    throw new ApiError("portal_unavailable", "No affichage portal is configured for this platform.", {
      passport_id: passport.id,
      reason: "not_configured",
    });
  const brandId = delegation.portalBrandId;
  const declaration = declarationOf(passport, converted.gtin, brandId);
  const existing = await app.store.findAffichage(t, passport.id);

  const outcome = await once<PortalOutcome>(call, "portal-declaration", async (effectKey, run) => {
    try {
      // The delegation as the portal sees it now.
      const brands = await portal.authorizedBrands(run.signal);
      if (!brands.includes(brandId)) return { kind: "delegation_refused" };
      // Asked before every filing: an earlier call whose answer was lost may have recorded it.
      const recorded = await portal.product(converted.gtin, run.signal);
      if (recorded && sameDeclaration(recorded.declaration as Declaration, declaration))
        return { kind: "found", product: recorded };
      const r = await portal.declare(declaration, effectKey, run.signal);
      if (r.kind === "forbidden") return { kind: "delegation_refused" };
      const product = await portal.product(converted.gtin, run.signal);
      if (!product) return { kind: "unavailable", reason: "not_readable_after_filing" };
      return { kind: r.kind === "created" ? "declared" : "already_declared", product };
    } catch (e) {
      if (e instanceof PortalUnavailable) return { kind: "unavailable", reason: e.reason };
      throw e;
    }
  });

  if (outcome.kind === "delegation_refused")
    throw new ApiError(
      "delegation_required",
      "The portal does not list a delegation from this brand to the platform; nothing was filed.",
      {
        passport_id: passport.id,
        delegation_status: delegation.status,
        checked: "portal",
        portal_brand_id: brandId,
      },
    );
  if (outcome.kind === "unavailable")
    throw new ApiError(
      "portal_unavailable",
      "The portal did not answer in time; the declaration may or may not be recorded. Retry with a NEW Idempotency-Key: the platform asks the portal what it recorded before it files again, so nothing is filed twice.",
      { passport_id: passport.id, reason: outcome.reason },
    );

  const product = outcome.product;
  const sameAsRecorded =
    existing !== undefined &&
    sameDeclaration(existing.declaration as Declaration, product.declaration as Declaration);
  const changed = outcome.kind === "declared" || (outcome.kind === "found" && !sameAsRecorded);
  const filedAt = new Date(product.upload.createdAt);
  const out: AffichageFiled = {
    passportId: passport.id,
    organizationId: t.organizationId,
    livemode: t.livemode,
    changed,
    unchangedReason: changed
      ? null
      : outcome.kind === "already_declared"
        ? "portal_already_declared"
        : "already_filed",
    status: "filed",
    filedAt,
    portalGtin: converted.gtin,
    portalScore: product.score,
    standardizedScore: product.standardized,
    durability: product.durability,
    officialLabelUrl: portal.labelUrl(converted.gtin),
    engineVersion: engineVersion(product.upload.version),
    declaredScore: null,
    freeOffer: entitlement === "free_offer",
  };
  if (changed || !existing) {
    await recordFiled(app, ctx, t, out, product);
    app.onCommitted();
  }
  return out;
}

async function recordFiled(
  app: FilingsApp,
  ctx: RequestContext,
  t: TenantContext,
  f: AffichageFiled,
  product: DeclaredProduct,
): Promise<void> {
  await app.store.recordFiling(
    ctx,
    t,
    {
      passport_id: f.passportId,
      filed_at: f.filedAt,
      portal_gtin: f.portalGtin,
      portal_score: f.portalScore,
      standardized_score: f.standardizedScore,
      durability: f.durability,
      engine_version: f.engineVersion,
      declaration: product.declaration,
    },
    domainEvent("affichage.filed", t, {
      object: "affichage",
      name: `organizations/${t.organizationId}/passports/${f.passportId}/affichage`,
      passport_id: f.passportId,
      status: "filed",
      portal_gtin: f.portalGtin,
    }),
  );
}
