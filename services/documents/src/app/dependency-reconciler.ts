/**
 * The reconciler of reading dependencies (docs/decisions/0058-authority-credential.md): a leader job
 * that deletes the `reading` dependencies whose unit reading does not exist.
 *
 * variants-units registers a reading's dependency here (RegisterDependency, once per effect key) before it writes
 * the reading, so a reading whose write then fails (a call sent without an Idempotency-Key that is not retried, a
 * process that died, a deadline that passed) leaves a dependency with no reading, and the document could never be
 * detached again (document_feeds_reading). Each pass reads a page of reading dependencies older than the grace (a
 * reading in flight commits within its deadline, far inside it), asks variants-units which readings exist
 * (FindReadings, signed with this service's key, the dependency's tenant forwarded), and deletes the others, still
 * only if older than the grace. Pages follow the dependencies' key and wrap around, so a pass is bounded and every
 * dependency is looked at again after a full round.
 */
import { randomBytes } from "node:crypto";
import type { ClientOf, RequestContext } from "@dpp/kit";
import type { variantsUnitsV1 } from "@dpp/proto";
import type { DocumentsStore, ReadingPosition } from "../store/store";

export type ReadingsClient = Pick<ClientOf<typeof variantsUnitsV1.VariantsUnitsService>, "findReadings">;

export interface DependencyReconcilerOptions {
  store: Pick<DocumentsStore, "staleReadingDependencies" | "releaseReadingDependencies">;
  variantsUnits: ReadingsClient;
  /** Only dependencies older than this are looked at and deleted. */
  graceMs: number;
  /** Dependencies read per pass (FindReadings takes at most 1000 ids per call). */
  pageSize?: number;
}

/** One pass per call; answers how many orphan dependencies it deleted. */
export function dependencyReconciler(o: DependencyReconcilerOptions): () => Promise<number> {
  const pageSize = Math.min(o.pageSize ?? 1000, 1000);
  let after: ReadingPosition | undefined;
  return async () => {
    const deps = await o.store.staleReadingDependencies(after, o.graceMs, pageSize);
    const last = deps[deps.length - 1];
    after = deps.length === pageSize && last ? last : undefined;
    const byTenant = new Map<string, ReadingPosition[]>();
    for (const d of deps) {
      const k = `${d.livemode ? "1" : "0"}${d.organization_id}`;
      byTenant.set(k, [...(byTenant.get(k) ?? []), d]);
    }
    let released = 0;
    for (const group of byTenant.values()) {
      const { organization_id: organizationId, livemode } = group[0]!;
      const context: RequestContext = {
        requestId: `dependency-reconcile-${randomBytes(6).toString("hex")}`,
        organizationId,
        livemode,
      };
      const references = [...new Set(group.map((d) => d.reference))];
      const { found } = await o.variantsUnits.findReadings({ readingIds: references }, { context });
      const exists = new Set(found);
      const orphans = references.filter((r) => !exists.has(r));
      if (orphans.length)
        released += await o.store.releaseReadingDependencies(
          { organizationId, livemode },
          orphans,
          o.graceMs,
        );
    }
    return released;
  };
}
