/**
 * Test-mode retention: a test passport is deleted 90 days after it was last edited (its updated_at, which every
 * change and transition moves), together with its GTIN claims, validation records and publish approvals, and a
 * passport.deleted event. Live passports are never deleted. It runs as the service's leader job (one replica at a
 * time); a pass deletes in batches, one transaction each, until nothing is due.
 */
import { domainEvent, passportRelated } from "@dpp/contract";
import type { PassportStore } from "../store";

export const TEST_RETENTION_DAYS = 90;

/** Deletes every test passport past retention; returns how many. */
export async function expireTestPassports(
  store: PassportStore,
  onCommitted: () => void,
  batchSize = 200,
): Promise<number> {
  let total = 0;
  for (;;) {
    const n = await store.transaction(null, async (tx) => {
      const due = await tx.deleteTestPassportsPastRetention(TEST_RETENTION_DAYS, batchSize);
      for (const p of due) {
        const tenant = { organizationId: p.organization_id, livemode: false };
        await tx.deleteDependents(tenant, p.id);
        await tx.appendEvent(domainEvent("passport.deleted", tenant, passportRelated(p, p.status)));
      }
      return due.length;
    });
    total += n;
    if (n < batchSize) break;
  }
  if (total > 0) onCommitted();
  return total;
}
