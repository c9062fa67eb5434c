/**
 * The reconciler of variant rows and their GTIN claims, this side (docs/decisions/0051-variants-and-units.md,
 * "Claims and rows"): a leader job that makes sure every variant row's GTIN is claimed by the row at the passport
 * service.
 *
 * A create claims before it inserts, so a row normally has its claim. One case leaves a row without it: the
 * passport service's reconciler released a claim whose row did not exist yet (a create whose process died after
 * the claim), and a retry under the same Idempotency-Key later inserted the rows (its claim is recorded as made,
 * so it is not made again). Each pass reads a page of rows older than the grace, in id order across tenants,
 * wrapping around, and claims their GTINs again for their own ids (ClaimGtins keeps a claim already held
 * by the same owner, so a row that has its claim costs nothing but the call). A row whose GTIN another passport
 * took meanwhile, or whose passport no longer exists, cannot be repaired here: it is logged, per row.
 */
import { ApiError } from "@dpp/contract";
import type { Logger, RequestContext } from "@dpp/kit";
import { randomBytes } from "node:crypto";
import type { VariantsUnitsStore } from "../store/store";
import type { PassportClient } from "./deps";

export interface ReconcileOptions {
  store: VariantsUnitsStore;
  passport: Pick<PassportClient, "claimGtins">;
  graceMs: number;
  log: Pick<Logger, "warn">;
  pageSize?: number;
}

type Row = { id: string; organization_id: string; livemode: boolean; passport_id: string; gtin: string };

/** One pass per call; answers how many rows it found unrepairable. */
export function variantClaimsReconciler(o: ReconcileOptions): () => Promise<number> {
  const pageSize = o.pageSize ?? 1000;
  let afterId = "";
  const claim = (context: RequestContext, rows: Row[]) =>
    o.passport.claimGtins(
      { claims: rows.map((r) => ({ gtin: r.gtin, passportId: r.passport_id, ownerId: r.id })) },
      { context },
    );
  return async () => {
    const rows = await o.store.variantsForReconcile(afterId, o.graceMs, pageSize);
    const last = rows[rows.length - 1];
    afterId = rows.length === pageSize && last ? last.id : "";
    const byTenant = new Map<string, Row[]>();
    for (const r of rows) {
      const k = `${r.livemode ? "1" : "0"}${r.organization_id}`;
      byTenant.set(k, [...(byTenant.get(k) ?? []), r]);
    }
    let unrepairable = 0;
    for (const group of byTenant.values()) {
      const context: RequestContext = {
        requestId: `variant-reconcile-${randomBytes(6).toString("hex")}`,
        organizationId: group[0]!.organization_id,
        livemode: group[0]!.livemode,
      };
      try {
        await claim(context, group);
      } catch (err) {
        if (!(err instanceof ApiError) || err.status >= 500) throw err;
        // A refusal names one row of the batch: claim each row alone to find every one.
        for (const r of group)
          await claim(context, [r]).catch((e: unknown) => {
            if (!(e instanceof ApiError) || e.status >= 500) throw e;
            unrepairable++;
            o.log.warn(
              { variant_id: r.id, passport_id: r.passport_id, gtin: r.gtin, code: e.code },
              "variant row whose GTIN claim cannot be made again",
            );
          });
      }
    }
    return unrepairable;
  };
}
