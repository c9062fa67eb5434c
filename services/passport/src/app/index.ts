/**
 * The passport use cases, bound to the store and settings: what the rpc handlers call, one per RPC. Each holds
 * its rules (or takes them from src/domain), raises ApiError refusals and builds domain events; queries are the
 * store's (src/store).
 */
import type { RequestContext } from "@dpp/kit";
import type { PassportApp } from "./deps";
import { getCategory, listCategories } from "./categories";
import { checkCreatePassport, createPassport, type CreateInput } from "./create";
import { createPassports, type BatchRow } from "./create-batch";
import {
  checkListQuery,
  getPassport,
  getPassportLinks,
  findPublicPassport,
  getUsage,
  listPassports,
  type ListQueryInput,
} from "./read";
import { updatePassport, type UpdateInput } from "./update";
import { publishPassport, transitionPassport, type PublishInput, type TransitionInput } from "./lifecycle";
import { validatePassport, type ValidateInput } from "./validation";
import { claimGtins, releaseGtins, type ClaimCondition, type ClaimInput } from "./gtin-claims";
import {
  decidePublishApproval,
  getPublishApproval,
  listPendingPublishApprovals,
  type DecidePublishApprovalInput,
} from "./publish-approvals";
import {
  createProposal,
  decideProposal,
  getProposal,
  listOpenProposals,
  withdrawProposal,
  type CreateProposalInput,
  type DecideProposalInput,
} from "./proposals";

export type { PassportApp, PassportAppOptions } from "./deps";
export type { PassportRow } from "../store";
export type { ValidationRecord } from "./validation";
export type { Warning } from "./publish-conditions";
export type { HeldClaim } from "./gtin-claims";
export type { PublishOutcome, TransitionInput } from "./lifecycle";
export type { PassportStatus } from "../domain/lifecycle";
export type { CategoryDefinition } from "../domain/categories";
export type { Links } from "../domain/links";
export type { ProposalView } from "./proposals";
export type { PublishApprovalView } from "./publish-approvals";

export function passportUseCases(app: PassportApp) {
  return {
    listCategories: () => listCategories(),
    getCategory: (category: string) => getCategory(category),
    checkCreatePassport: (ctx: RequestContext, input: CreateInput) => checkCreatePassport(ctx, input),
    createPassport: (ctx: RequestContext, input: CreateInput) => createPassport(app, ctx, input),
    createPassports: (
      call: { ctx: RequestContext; caller: string },
      rows: BatchRow[],
      toMessage: Parameters<typeof createPassports>[3],
    ) => createPassports(app, call, rows, toMessage),
    getPassport: (ctx: RequestContext, id: string) => getPassport(app, ctx, id),
    checkListQuery: (ctx: RequestContext, input: ListQueryInput) => checkListQuery(ctx, input),
    listPassports: (ctx: RequestContext, input: ListQueryInput) => listPassports(app, ctx, input),
    updatePassport: (ctx: RequestContext, input: UpdateInput) => updatePassport(app, ctx, input),
    publishPassport: (ctx: RequestContext, input: PublishInput) => publishPassport(app, ctx, input),
    transitionPassport: (ctx: RequestContext, input: TransitionInput) => transitionPassport(app, ctx, input),
    validatePassport: (ctx: RequestContext, input: ValidateInput) => validatePassport(app, ctx, input),
    getPassportLinks: (ctx: RequestContext, id: string) => getPassportLinks(app, ctx, id),
    findPublicPassport: (key: { id?: string; gtin14?: string }) => findPublicPassport(app, key),
    claimGtins: (ctx: RequestContext, claims: ClaimInput[], condition?: ClaimCondition) =>
      claimGtins(app, ctx, claims, condition),
    releaseGtins: (ctx: RequestContext, releases: { gtin: string; owner_id: string }[]) =>
      releaseGtins(app, ctx, releases),
    getUsage: (ctx: RequestContext) => getUsage(app, ctx),
    getPublishApproval: (ctx: RequestContext, id: string) => getPublishApproval(app, ctx, id),
    decidePublishApproval: (ctx: RequestContext, input: DecidePublishApprovalInput) =>
      decidePublishApproval(app, ctx, input),
    createProposal: (ctx: RequestContext, input: CreateProposalInput) => createProposal(app, ctx, input),
    getProposal: (ctx: RequestContext, id: string) => getProposal(app, ctx, id),
    withdrawProposal: (ctx: RequestContext, id: string) => withdrawProposal(app, ctx, id),
    decideProposal: (ctx: RequestContext, input: DecideProposalInput) => decideProposal(app, ctx, input),
    listReviewItems: async (ctx: RequestContext) => ({
      proposals: await listOpenProposals(app, ctx),
      approvals: await listPendingPublishApprovals(app, ctx),
    }),
  };
}

export type PassportUseCases = ReturnType<typeof passportUseCases>;
