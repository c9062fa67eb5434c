/**
 * Change proposals on published passports (docs/decisions/0057). A connector credential proposes and may
 * withdraw; a person (the review page, credential kind `person`) accepts, which applies the fields as a versioned
 * update of the passport (passport.updated), or rejects. Each write is one transaction that records its event.
 */
import {
  ApiError,
  domainEvent,
  newId,
  validationFailed,
  type Issue,
  type ProposalRelated,
} from "@dpp/contract";
import { requireTenant, type RequestContext, type TenantContext } from "@dpp/kit";
import { UniqueConflict, type PassportRow, type ProposalRow } from "../store";
import { liveWriteRefusal } from "../domain/plan-rules";
import { applyPassportPatch, parsePatchBody } from "../domain/update-passport";
import { parseJsonBody } from "../domain/json-body";
import {
  fieldBase,
  PROPOSAL_LIFETIME_DAYS,
  proposalStateOnRead,
  proposedFieldNames,
  type ProposalState,
} from "../domain/proposals";
import type { PassportApp } from "./deps";
import { claimLeadGtin } from "./gtin-claims";
import { lockPassport, writeVersioned } from "./passport-access";
import { throwIf } from "./refusals";

export interface ProposalView {
  id: string;
  organizationId: string;
  livemode: boolean;
  passportId: string;
  state: ProposalState;
  moved: string[];
  fields: Record<string, unknown>;
  reviewUrl: string;
  requestedAt: Date;
  expiresAt: Date;
  decidedAt: Date | null;
  decidedBy: string | null;
  requestedByKeyId: string | null;
}

/** Where a person reviews a proposal. */
export function proposalReviewUrl(
  app: { reviewBaseUrl: string },
  organizationId: string,
  id: string,
): string {
  return `${app.reviewBaseUrl}/organizations/${encodeURIComponent(organizationId)}/proposals/${id}`;
}

const MAX_ID_LENGTH = 255;

function proposalNotFound(id: string): ApiError {
  return new ApiError("resource_not_found", `No proposal ${id}.`, { proposal_id: id });
}

/** Only an assistant's credential (a connector key) proposes and withdraws; a person or a secret key edits. */
function requireAssistant(ctx: RequestContext, action: string): void {
  if (ctx.credentialKind !== "connector")
    throw new ApiError(
      "proposal_requires_assistant",
      `Only a connector credential ${action} proposals; with this credential, change the passport directly (PATCH).`,
      { credential_kind: ctx.credentialKind ?? null },
    );
}

/** Only a person signed in to the review page decides. */
function requirePerson(ctx: RequestContext): void {
  if (ctx.credentialKind !== "person")
    throw new ApiError(
      "insufficient_scope",
      "Only a person of the organization decides, on the review page.",
      {
        credential_kind: ctx.credentialKind ?? null,
      },
    );
}

function view(app: PassportApp, row: ProposalRow, passport: PassportRow | undefined): ProposalView {
  const { state, moved } = proposalStateOnRead(row, passport, new Date());
  return {
    id: row.id,
    organizationId: row.organization_id,
    livemode: row.livemode,
    passportId: row.passport_id,
    state,
    moved,
    fields: row.fields,
    reviewUrl: proposalReviewUrl(app, row.organization_id, row.id),
    requestedAt: row.requested_at,
    expiresAt: row.expires_at,
    decidedAt: row.decided_at,
    decidedBy: row.decided_by,
    requestedByKeyId: row.requested_by_key_id,
  };
}

function related(row: ProposalRow, state: string): ProposalRelated {
  return {
    object: "passport_proposal",
    id: row.id,
    name: `organizations/${row.organization_id}/proposals/${row.id}`,
    passport_id: row.passport_id,
    state,
  };
}

function wrongPassportStatus(p: PassportRow, action: string): ApiError {
  return new ApiError(
    "wrong_status",
    `Only a published passport takes ${action}; this passport is ${p.status}.`,
    { passport_id: p.id, status: p.status, allowed_statuses: ["published"] },
  );
}

function wrongProposalState(id: string, state: ProposalState, moved: string[], action: string): ApiError {
  return new ApiError("wrong_status", `The proposal is ${state}; only a pending proposal can be ${action}.`, {
    proposal_id: id,
    state,
    moved,
  });
}

export interface CreateProposalInput {
  passportId: string;
  /** The `fields` member of the body, as JSON text: a merge patch of the passport. */
  fieldsJson: string;
}

export async function createProposal(
  app: PassportApp,
  ctx: RequestContext,
  input: CreateProposalInput,
): Promise<ProposalView> {
  requireAssistant(ctx, "makes");
  const t = requireTenant(ctx);
  throwIf(liveWriteRefusal(ctx));
  const { row, passport } = await underFields(() => insertProposal(app, ctx, t, input));
  app.onCommitted();
  return view(app, row, passport);
}

/** Issues found in the proposed fields point into the body's `fields` (as a PATCH's would point into its body). */
async function underFields<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof ApiError && err.code === "validation_failed" && Array.isArray(err.details.issues)) {
      const issues = (err.details.issues as Issue[]).map((i) =>
        "pointer" in i.source ? { ...i, source: { pointer: `/fields${i.source.pointer}` } } : i,
      );
      throw validationFailed(issues);
    }
    throw err;
  }
}

function insertProposal(app: PassportApp, ctx: RequestContext, t: TenantContext, input: CreateProposalInput) {
  const patch = parsePatchBody(parseJsonBody(input.fieldsJson));
  return app.store.transaction(t, async (tx) => {
    const current = await lockPassport(tx, t, input.passportId);
    if (current.status !== "published") throw wrongPassportStatus(current, "proposals");
    // Validated like an update: the merged document must be valid, and it must change something.
    const next = applyPassportPatch(current, patch);
    if (!next.changed)
      throw new ApiError("no_changes", "The proposed fields are the passport's values already.", {
        passport_id: current.id,
        fields: proposedFieldNames(patch),
      });
    const names = proposedFieldNames(patch);
    const row = await tx.insertProposal(t, {
      id: newId("prop"),
      passport_id: current.id,
      passport_version: current.version,
      fields: JSON.parse(input.fieldsJson) as Record<string, unknown>,
      base: fieldBase(current, names),
      requested_by_key_id: ctx.keyId ?? null,
      lifetime_days: PROPOSAL_LIFETIME_DAYS,
    });
    await tx.appendEvent(domainEvent("proposal.created", t, related(row, "pending")));
    return { row, passport: current };
  });
}

async function findProposal(app: PassportApp, t: TenantContext, id: string): Promise<ProposalRow> {
  const row = id.length <= MAX_ID_LENGTH ? await app.store.getProposal(t, id) : undefined;
  if (!row) throw proposalNotFound(id);
  return row;
}

export async function getProposal(app: PassportApp, ctx: RequestContext, id: string): Promise<ProposalView> {
  const t = requireTenant(ctx);
  const row = await findProposal(app, t, id);
  return view(app, row, await app.store.get(t, row.passport_id));
}

export async function withdrawProposal(
  app: PassportApp,
  ctx: RequestContext,
  id: string,
): Promise<ProposalView> {
  requireAssistant(ctx, "withdraws");
  const t = requireTenant(ctx);
  const out = await app.store.transaction(t, async (tx) => {
    const row = id.length <= MAX_ID_LENGTH ? await tx.lockProposal(t, id) : undefined;
    if (!row) throw proposalNotFound(id);
    const passport = await tx.get(t, row.passport_id);
    const seen = proposalStateOnRead(row, passport, new Date());
    // Waiting for a person (pending, or out_of_date: nobody decided it) is what can be withdrawn.
    if (seen.state !== "pending" && seen.state !== "out_of_date")
      throw wrongProposalState(id, seen.state, seen.moved, "withdrawn");
    const updated = await tx.decideProposal(t, id, "withdrawn", null);
    await tx.appendEvent(domainEvent("proposal.withdrawn", t, related(updated, "withdrawn")));
    return { row: updated, passport };
  });
  app.onCommitted();
  return view(app, out.row, out.passport);
}

export interface DecideProposalInput {
  id: string;
  accept: boolean;
  /** Who decided (the review page's `person:<id>`). */
  decidedBy: string;
}

/**
 * A person's decision. Accepting applies the fields as a versioned update (the passport must still be
 * published, the merged document valid; passport.updated), then records proposal.accepted; rejecting records
 * proposal.rejected. Only a proposal seen pending can be decided (out_of_date or expired: wrong_status).
 */
export async function decideProposal(
  app: PassportApp,
  ctx: RequestContext,
  input: DecideProposalInput,
): Promise<{ proposal: ProposalView; passport: PassportRow }> {
  requirePerson(ctx);
  const t = requireTenant(ctx);
  const { id } = input;
  if (input.accept) throwIf(liveWriteRefusal(ctx));
  const out = await decideInTransaction(app, t, input).catch((err: unknown) => {
    if (err instanceof UniqueConflict && err.key === "external_id")
      throw new ApiError("already_exists", "Another passport has the proposed external_id.", {
        proposal_id: id,
        issues: [{ source: { pointer: "/fields/external_id" }, rule: "unique" }],
      });
    throw err;
  });
  app.onCommitted();
  return { proposal: view(app, out.row, out.passport), passport: out.passport };
}

function decideInTransaction(app: PassportApp, t: TenantContext, input: DecideProposalInput) {
  const { id } = input;
  return app.store.transaction(t, async (tx) => {
    const row = id.length <= MAX_ID_LENGTH ? await tx.lockProposal(t, id) : undefined;
    if (!row) throw proposalNotFound(id);
    let passport = await lockPassport(tx, t, row.passport_id);
    const seen = proposalStateOnRead(row, passport, new Date());
    const verb = input.accept ? "accepted" : "rejected";
    if (seen.state !== "pending") throw wrongProposalState(id, seen.state, seen.moved, verb);
    if (input.accept) {
      if (passport.status !== "published") throw wrongPassportStatus(passport, "accepted proposals");
      const next = applyPassportPatch(passport, parsePatchBody(row.fields));
      if (next.changed) {
        if (next.gtin !== passport.gtin) {
          if (passport.gtin) await tx.deleteLeadClaim(t, passport.gtin, passport.id);
          if (next.gtin) await claimLeadGtin(tx, t, next.gtin, passport.id);
        }
        passport = await writeVersioned(
          tx,
          t,
          passport,
          {
            data: next.data,
            gtin: next.gtin,
            serial_number: next.serialNumber,
            external_id: next.externalId,
          },
          "passport.updated",
          undefined,
        );
      }
    }
    const updated = await tx.decideProposal(t, id, verb, input.decidedBy);
    await tx.appendEvent(
      domainEvent(input.accept ? "proposal.accepted" : "proposal.rejected", t, related(updated, verb)),
    );
    return { row: updated, passport };
  });
}

/** The review page's list: the tenant's proposals stored pending (newest first), as a read shows them. */
export async function listOpenProposals(app: PassportApp, ctx: RequestContext): Promise<ProposalView[]> {
  const t = requireTenant(ctx);
  const rows = await app.store.listPendingProposals(t, 100);
  const out: ProposalView[] = [];
  for (const r of rows) out.push(view(app, r, await app.store.get(t, r.passport_id)));
  return out;
}
