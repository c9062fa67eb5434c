/**
 * The rules of a French affichage filing, pure: the GTIN the portal takes, the declaration made from a passport,
 * and what blocks a filing.
 */
import { planLimits } from "@dpp/contract";
import type { Declaration } from "../portal/port";

/** The attestation wording a person at the brand accepts before the platform files for it. */
export const ATTESTATION_WORDING_VERSION = "2026-01";

/**
 * The portal takes GTIN-8 or GTIN-13 only. A passport's GTIN is kept in its 14-digit form: a GTIN-14 whose
 * indicator digit is 0 is the GTIN-13 behind it (and a padded GTIN-8 or GTIN-12 the same way); one with another
 * indicator digit names a trade unit of several items and has no GTIN-13 form.
 */
export function portalGtin(gtin14: string): { gtin: string } | { refused: string } {
  if (!/^\d{14}$/.test(gtin14)) return { refused: `${gtin14} is not a 14-digit GTIN.` };
  if (gtin14.startsWith("000000")) return { gtin: gtin14.slice(6) };
  if (gtin14.startsWith("0")) return { gtin: gtin14.slice(1) };
  return {
    refused: `The portal takes GTIN-8 or GTIN-13; ${gtin14} has indicator digit ${gtin14[0]} and no GTIN-13 form.`,
  };
}

export interface PassportView {
  id: string;
  status: string;
  category: string;
  gtin: string | null;
  data: Record<string, unknown>;
}

/** Mass used when the passport states none: the portal's default garment mass is not ours to guess, so 0 is never sent. */
const DEFAULT_MASS_G = 200;

/** The declaration the portal receives for a passport (its data in the portal's vocabulary). */
export function declarationOf(p: PassportView, gtin: string, brandId: string): Declaration {
  const d = p.data;
  const massQ = d.product_mass as { value?: unknown } | undefined;
  const mass = typeof massQ?.value === "number" && massQ.value > 0 ? massQ.value : DEFAULT_MASS_G;
  const comp = Array.isArray(d.material_composition) ? d.material_composition : [];
  const materials = comp
    .map((m) => m as { fiber?: unknown; percentage?: unknown })
    .filter((m) => typeof m.fiber === "string" && typeof m.percentage === "number")
    .map((m) => ({ id: (m.fiber as string).toLowerCase(), share: (m.percentage as number) / 100 }));
  const country =
    typeof d.making_up_country === "string"
      ? d.making_up_country
      : typeof d.manufacturer_country === "string"
        ? d.manufacturer_country
        : null;
  return { gtins: [gtin], internalReference: p.id, brandId, mass, materials, countryMaking: country };
}

/** Whether the portal's record is this declaration (asked before filing again after an unknown outcome). */
export function sameDeclaration(a: Declaration, b: Declaration): boolean {
  const norm = (x: Declaration) =>
    JSON.stringify([
      [...x.gtins].sort(),
      x.internalReference,
      x.brandId,
      x.mass,
      x.materials.map((m) => [m.id, m.share]),
      x.countryMaking ?? null,
    ]);
  return norm(a) === norm(b);
}

export interface BlockerInputs {
  livemode: boolean;
  passport: PassportView;
  delegationStatus: string;
  attested: boolean;
  entitlement: Entitlement;
  portalConfigured: boolean;
}

export type Entitlement = "included" | "free_offer" | "unavailable";

/** The plan's entitlement to filing: included on an active paid plan, the free offer otherwise, unknown when the subscription is in trouble. */
export function entitlementOf(plan: { planId: string; subscriptionStatus: string } | undefined): Entitlement {
  if (!plan) return "unavailable";
  if (plan.subscriptionStatus === "past_due" || plan.subscriptionStatus === "canceled") return "unavailable";
  return planLimits(plan.planId).paid && plan.subscriptionStatus === "active" ? "included" : "free_offer";
}

/**
 * What blocks a filing now, in the order a POST refuses: the codes of its refusals. delegation_required here is
 * the recorded status; a POST also asks the portal.
 */
export function blockersOf(i: BlockerInputs): string[] {
  const out: string[] = [];
  if (!i.livemode) out.push("test_mode_refused");
  if (i.entitlement === "unavailable") out.push("entitlement_unavailable");
  if (i.passport.status !== "published") out.push("wrong_status");
  if (!i.passport.gtin || "refused" in portalGtin(i.passport.gtin)) out.push("gtin_required");
  if (!i.attested) out.push("attestation_required");
  if (i.delegationStatus !== "active") out.push("delegation_required");
  if (!i.portalConfigured) out.push("portal_unavailable");
  return out;
}
