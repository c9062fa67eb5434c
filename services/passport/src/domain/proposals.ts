/**
 * Change proposals (docs/decisions/0057): `fields` is a merge patch in the shape PATCH .../passports/{id} takes
 * ({data?, external_id?}). A proposal names fields: each member of `data` it sets or removes, and
 * `external_id`. Its state is stored (pending, withdrawn, accepted, rejected) and, while stored pending, seen on
 * read: `expired` once expires_at has passed, else `out_of_date` when a field it names has moved on the passport
 * since it was made (`moved` lists them).
 */
import { jsonEqual } from "./merge-patch";
import type { PassportPatch } from "./update-passport";

/** How long a proposal waits for a person before it is expired (seen on read). */
export const PROPOSAL_LIFETIME_DAYS = 14;

export type ProposalState = "pending" | "withdrawn" | "out_of_date" | "expired" | "accepted" | "rejected";

export interface PassportFieldsSource {
  data: Record<string, unknown>;
  external_id: string | null;
}

/** The field names a patch touches: its data members, and external_id when it sets or removes it. */
export function proposedFieldNames(patch: PassportPatch): string[] {
  const names = Object.keys(patch.data ?? {});
  if (patch.externalId !== undefined) names.push("external_id");
  return names;
}

/** The value of a proposed field on a passport (null when absent). */
export function fieldValue(p: PassportFieldsSource, name: string): unknown {
  if (name === "external_id") return p.external_id;
  return Object.prototype.hasOwnProperty.call(p.data, name) ? p.data[name] : null;
}

/** The passport's value of each named field: what a later read compares against. */
export function fieldBase(p: PassportFieldsSource, names: readonly string[]): Record<string, unknown> {
  return Object.fromEntries(names.map((n) => [n, fieldValue(p, n)]));
}

/** The fields whose value on the passport is no longer the one the proposal was made against. */
export function movedFields(p: PassportFieldsSource, base: Record<string, unknown>): string[] {
  return Object.keys(base).filter((n) => !jsonEqual(fieldValue(p, n), base[n]));
}

export interface StoredProposal {
  state: string;
  expires_at: Date;
  base: Record<string, unknown>;
}

/** The state a read shows, and the fields that moved (only for out_of_date). */
export function proposalStateOnRead(
  proposal: StoredProposal,
  passport: PassportFieldsSource | undefined,
  now: Date,
): { state: ProposalState; moved: string[] } {
  if (proposal.state !== "pending") return { state: proposal.state as ProposalState, moved: [] };
  if (now.getTime() >= proposal.expires_at.getTime()) return { state: "expired", moved: [] };
  const moved = passport ? movedFields(passport, proposal.base) : [];
  return moved.length ? { state: "out_of_date", moved } : { state: "pending", moved: [] };
}
