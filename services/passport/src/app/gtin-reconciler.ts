/**
 * The reconciler of variant GTIN claims (docs/decisions/0051-variants-and-units.md, "Claims and rows"): a leader
 * job that releases the variant claims whose variant row does not exist.
 *
 * variants-units claims a batch's GTINs here before it inserts the rows, and releases them after it deleted the
 * rows, so a process that dies between the two steps leaves a claim without its row (never the reverse, but see
 * variants-units' own reconciler for a keyed retry that comes after this one released). Each pass reads a page of
 * variant claims older than the grace (a create in flight commits its rows within its deadline, far inside it),
 * asks variants-units which owners exist (FindVariantOwners, signed with this service's key, the claim's tenant
 * forwarded), and deletes the others, still only if older than the grace. Pages follow the claims' key and wrap
 * around, so a pass is bounded and every claim is looked at again after a full round.
 */
import { randomBytes } from "node:crypto";
import type { ClientOf, RequestContext } from "@dpp/kit";
import type { variantsUnitsV1 } from "@dpp/proto";
import type { PassportStore } from "../store";
import type { ClaimPosition } from "../store/passport-store";

export type VariantOwnersClient = Pick<
  ClientOf<typeof variantsUnitsV1.VariantsUnitsService>,
  "findVariantOwners"
>;

export interface GtinReconcilerOptions {
  store: PassportStore;
  variantsUnits: VariantOwnersClient;
  /** Only claims older than this are looked at and released. */
  graceMs: number;
  /** Claims read per pass (FindVariantOwners takes at most 1000 ids per call). */
  pageSize?: number;
}

/** One pass of the reconciler per call; answers how many orphan claims it released. */
export function gtinReconciler(o: GtinReconcilerOptions): () => Promise<number> {
  const pageSize = Math.min(o.pageSize ?? 1000, 1000);
  let after: ClaimPosition | undefined;
  return async () => {
    const claims = await o.store.staleVariantClaims(after, o.graceMs, pageSize);
    const last = claims[claims.length - 1];
    after = claims.length === pageSize && last ? last : undefined;
    const byTenant = new Map<string, typeof claims>();
    for (const c of claims) {
      const k = `${c.livemode ? "1" : "0"}${c.organization_id}`;
      byTenant.set(k, [...(byTenant.get(k) ?? []), c]);
    }
    let released = 0;
    for (const group of byTenant.values()) {
      const { organization_id: organizationId, livemode } = group[0]!;
      const context: RequestContext = {
        requestId: `gtin-reconcile-${randomBytes(6).toString("hex")}`,
        organizationId,
        livemode,
      };
      const { found } = await o.variantsUnits.findVariantOwners(
        { variantIds: [...new Set(group.map((c) => c.owner_id))] },
        { context },
      );
      const exists = new Set(found);
      const orphans = group.filter((c) => !exists.has(c.owner_id));
      if (orphans.length)
        released += await o.store.releaseOrphanClaims(
          { organizationId, livemode },
          orphans.map((c) => ({ gtin: c.gtin, owner_id: c.owner_id })),
          o.graceMs,
        );
    }
    return released;
  };
}
