/**
 * GTIN claims: a GTIN is held by one passport of a tenant, as its lead GTIN or for one of its variants (claimed
 * by the variants service, in batches). The claims table is this service's; other services ask through these.
 */
import { ApiError } from "@dpp/contract";
import { requireTenant, type RequestContext, type TenantContext } from "@dpp/kit";
import type { ClaimHolder, PassportTx } from "../store";
import { normalizeBatch, type ClaimInput } from "../domain/gtin-batch";
import type { PassportApp } from "./deps";
import { gtinInUse, notFound, passportName } from "./refusals";

export type { ClaimInput };

export interface HeldClaim {
  gtin: string;
  passport_id: string;
  owner_id: string;
  role: "lead" | "variant";
}

/**
 * Claims a passport's lead GTIN inside the caller's transaction. Kept when the passport already holds it; a GTIN
 * held by another passport (lead or variant) is gtin_in_use naming that passport.
 */
export async function claimLeadGtin(
  tx: PassportTx,
  t: TenantContext,
  gtin: string,
  passportId: string,
): Promise<void> {
  const inserted = await tx.insertClaims(t, [
    { gtin, passport_id: passportId, role: "lead", owner_id: passportId },
  ]);
  if (inserted.length) return;
  const holder = await tx.claimHolder(t, gtin);
  if (holder && holder.passport_id === passportId && holder.owner_id === passportId) return;
  throw gtinInUse(t, gtin, holder, "/data/gtin");
}

/** What the passports of a batch must be for it to be claimed (ClaimCondition; an empty list allows any). */
export interface ClaimCondition {
  categories: readonly string[];
  statuses: readonly string[];
}

/**
 * Claims variant GTINs, all or none. A GTIN already held by the same owner, or the passport's own lead, is kept.
 * With a condition, a passport of the batch outside it refuses the batch before anything is claimed (its caller
 * reads the passport's category and status with the claim rather than before it).
 */
export async function claimGtins(
  app: PassportApp,
  ctx: RequestContext,
  claims: ClaimInput[],
  condition?: ClaimCondition,
): Promise<HeldClaim[]> {
  const t = requireTenant(ctx);
  const normalized = normalizeBatch(claims, "claims", true);
  return app.store.transaction(t, async (tx) => {
    const passportIds = [...new Set(normalized.map((c) => c.passport_id))];
    const found = await tx.passportStates(t, passportIds);
    const missing = passportIds.find((p) => !found.some((f) => f.id === p));
    if (missing) throw notFound(missing);
    if (condition)
      for (const p of found)
        if (
          (condition.categories.length && !condition.categories.includes(p.category)) ||
          (condition.statuses.length && !condition.statuses.includes(p.status))
        )
          throw new ApiError(
            "wrong_status",
            `Passport ${p.id} (${p.category}, ${p.status}) is not one whose GTINs this claim may take.`,
            { reason: "claim_condition", passport_id: p.id, category: p.category, status: p.status },
          );
    // One insert of the whole batch (without a conflict check when no GTIN is held, the common case); only the
    // GTINs it did not insert (held already: by the same owner on a retry, by the passport's own lead, or by
    // another passport) have their holders read. A holder that released its GTIN between the insert and that read
    // leaves the GTIN free: it is inserted again (at most twice more).
    const rows = normalized.map((c) => ({
      gtin: c.gtin,
      passport_id: c.passport_id,
      role: "variant" as const,
      owner_id: c.owner_id,
    }));
    // Every claim new: each held by its owner as asked.
    if (await tx.insertFreshClaims(t, rows)) return rows;
    const inserted = new Set(await tx.insertClaims(t, rows));
    const byGtin = new Map<string, ClaimHolder>();
    for (let pass = 0; ; pass++) {
      const held = normalized.filter((c) => !inserted.has(c.gtin) && !byGtin.has(c.gtin)).map((c) => c.gtin);
      if (!held.length) break;
      for (const r of await tx.claimHolders(t, held)) byGtin.set(r.gtin, r);
      const freed = new Set(held.filter((g) => !byGtin.has(g)));
      if (!freed.size) break;
      if (pass === 2) throw new Error(`GTIN claims kept changing under the claim: ${[...freed].join(", ")}`);
      const again = await tx.insertClaims(
        t,
        rows.filter((r) => freed.has(r.gtin)),
      );
      for (const g of again) inserted.add(g);
    }
    for (const c of normalized)
      if (inserted.has(c.gtin))
        byGtin.set(c.gtin, {
          gtin: c.gtin,
          passport_id: c.passport_id,
          owner_id: c.owner_id,
          role: "variant",
          product_name: null,
        });
    const out: HeldClaim[] = [];
    const conflicts: Record<string, unknown>[] = [];
    normalized.forEach((c, i) => {
      const h = byGtin.get(c.gtin)!;
      const ownLead = h.role === "lead" && h.passport_id === c.passport_id;
      const same = h.passport_id === c.passport_id && h.owner_id === c.owner_id;
      if (ownLead || same)
        out.push({ gtin: h.gtin, passport_id: h.passport_id, owner_id: h.owner_id, role: h.role });
      else
        conflicts.push({
          index: i,
          gtin: c.gtin,
          passport: passportName(t, h.passport_id),
          passport_id: h.passport_id,
          product_name: h.product_name,
          role: h.role,
        });
    });
    if (conflicts.length) {
      const first = conflicts[0]!;
      throw new ApiError("gtin_in_use", `GTIN ${String(first.gtin)} belongs to another passport.`, {
        ...first,
        conflicts,
        issues: conflicts.map((c) => ({
          source: { pointer: `/claims/${String(c.index)}/gtin` },
          rule: "gtin_in_use",
        })),
      });
    }
    return out;
  });
}

/** Releases variant claims held by the given owners; returns which GTINs were released and which were not held. */
export async function releaseGtins(
  app: PassportApp,
  ctx: RequestContext,
  releases: { gtin: string; owner_id: string }[],
): Promise<{ released: string[]; absent: string[] }> {
  const t = requireTenant(ctx);
  const normalized = normalizeBatch(
    releases.map((r) => ({ ...r, passport_id: "" })),
    "releases",
    false,
  );
  const released = new Set(await app.store.releaseVariantClaims(t, normalized));
  return {
    released: normalized.filter((r) => released.has(r.gtin)).map((r) => r.gtin),
    absent: normalized.filter((r) => !released.has(r.gtin)).map((r) => r.gtin),
  };
}
