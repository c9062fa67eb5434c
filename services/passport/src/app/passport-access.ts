/**
 * Finding a passport by id, and the steps every write by id takes inside its one transaction: read the tenant's
 * passport and lock its row, then write with `WHERE version = <read>` and record the event in the same
 * transaction's outbox.
 */
import { domainEvent, passportRelated } from "@dpp/contract";
import { type TenantContext } from "@dpp/kit";
import type { PassportChange, PassportReads, PassportRow, PassportTx } from "../store";
import type { PassportEventType } from "../domain/lifecycle";
import { notFound, preconditionFailed } from "./refusals";

const MAX_ID_LENGTH = 255;

/** The tenant's passport, or resource_not_found. */
export async function findPassport(q: PassportReads, t: TenantContext, id: string): Promise<PassportRow> {
  const row = id.length <= MAX_ID_LENGTH ? await q.get(t, id) : undefined;
  if (!row) throw notFound(id);
  return row;
}

/** The tenant's passport with its row locked until the transaction ends, or resource_not_found. */
export async function lockPassport(tx: PassportTx, t: TenantContext, id: string): Promise<PassportRow> {
  const row = id.length <= MAX_ID_LENGTH ? await tx.lockForUpdate(t, id) : undefined;
  if (!row) throw notFound(id);
  return row;
}

/**
 * Writes a change to a passport locked in this transaction, only if it is still at the version read, and
 * records `event` in the outbox of the same transaction (one statement: the event describes the row the write
 * leaves, the version after the read one). precondition_failed when the version moved.
 */
export async function writeVersioned(
  tx: PassportTx,
  t: TenantContext,
  current: PassportRow,
  change: PassportChange,
  event: PassportEventType,
  expectedVersion: number | undefined,
): Promise<PassportRow> {
  const next = { ...current, status: change.status ?? current.status, version: current.version + 1 };
  const updated = await tx.updateVersioned(
    t,
    current.id,
    current.version,
    change,
    domainEvent(event, t, passportRelated(next, current.status)),
  );
  if (!updated) throw preconditionFailed(current.version, expectedVersion);
  return updated;
}
