/**
 * The PassportService handlers: each maps its request message to one use case's input, calls that use case
 * (src/app) and maps the result back to a message. No rules and no queries here.
 */
import type { ImplOf, RequestContext } from "@dpp/kit";
import { create } from "@bufbuild/protobuf";
import { passportV1 } from "@dpp/proto";
import type { PassportUseCases, TransitionInput } from "../app";
import {
  categoryMessage,
  dateOf,
  linksMessage,
  passportMessage,
  publishOutcomeMessage,
  statusOf,
  proposalMessage,
  publishApprovalMessage,
  validationMessage,
  warningMessage,
} from "./messages";

type Impl = ImplOf<typeof passportV1.PassportService>;

export function passportRpc(uc: PassportUseCases): Impl {
  const transition =
    (name: TransitionInput["transition"]) =>
    async (req: { id: string; expectedVersion?: number }, { ctx }: { ctx: RequestContext }) => ({
      passport: passportMessage(
        await uc.transitionPassport(ctx, {
          id: req.id,
          transition: name,
          expectedVersion: req.expectedVersion,
        }),
      ),
    });
  return {
    listCategories: () => ({ categories: uc.listCategories().map(categoryMessage) }),

    getCategorySchema: ({ category }) => {
      const c = uc.getCategory(category);
      return { category: categoryMessage(c), schemaJson: JSON.stringify(c.schema) };
    },

    createPassport: async (req, { ctx }) => {
      const input = { category: req.category, externalId: req.externalId, dataJson: req.dataJson };
      if (req.validateOnly) {
        uc.checkCreatePassport(ctx, input);
        return {};
      }
      return { passport: passportMessage(await uc.createPassport(ctx, input)) };
    },

    createPassports: async (req, call) => {
      const rows = req.rows.map((r) => ({
        key: r.key,
        category: r.category,
        externalId: r.externalId,
        dataJson: r.dataJson,
      }));
      const toMessage = (row: Parameters<typeof passportMessage>[0]) =>
        create(passportV1.PassportSchema, passportMessage(row));
      const outcomes = await uc.createPassports({ ctx: call.ctx, caller: call.caller }, rows, toMessage);
      return {
        results: outcomes.map((o) =>
          "passport" in o
            ? { outcome: { case: "passport" as const, value: o.passport }, replayed: o.replayed }
            : {
                outcome: {
                  case: "error" as const,
                  value: {
                    code: o.error.code,
                    message: o.error.message,
                    detailsJson: JSON.stringify(o.error.details ?? {}),
                  },
                },
                replayed: o.replayed,
              },
        ),
      };
    },

    getPassport: async ({ id }, { ctx }) => ({ passport: passportMessage(await uc.getPassport(ctx, id)) }),

    listPassports: async (req, { ctx }) => {
      const input = {
        limit: req.limit,
        cursor: req.cursor,
        status: statusOf(req.status),
        category: req.category,
        updatedSince: dateOf(req.updatedSince),
      };
      if (req.validateOnly) {
        uc.checkListQuery(ctx, input);
        return {};
      }
      const page = await uc.listPassports(ctx, input);
      return {
        passports: page.passports.map(passportMessage),
        hasMore: page.hasMore,
        nextCursor: page.nextCursor,
      };
    },

    updatePassport: async (req, { ctx }) => ({
      passport: passportMessage(
        await uc.updatePassport(ctx, {
          id: req.id,
          patchJson: req.patchJson,
          expectedVersion: req.expectedVersion,
        }),
      ),
    }),

    publishPassport: async (req, { ctx }) => {
      const outcome = await uc.publishPassport(ctx, {
        id: req.id,
        variantReviewFingerprint: req.variantReviewFingerprint,
        expectedVersion: req.expectedVersion,
      });
      return publishOutcomeMessage(outcome);
    },

    unpublishPassport: transition("unpublish"),
    trashPassport: transition("trash"),
    restorePassport: transition("restore"),
    deactivatePassport: transition("deactivate"),
    reactivatePassport: transition("reactivate"),
    lockPassport: transition("lock"),
    unlockPassport: transition("unlock"),

    validatePassport: async (req, { ctx }) => ({
      validation: validationMessage(await uc.validatePassport(ctx, { id: req.id, dryRun: req.dryRun })),
    }),

    getPassportLinks: async (req, { ctx }) => {
      const { row, links } = await uc.getPassportLinks(ctx, req.id);
      return { links: linksMessage(row, links) };
    },

    findPublicPassport: async (req) => {
      const key =
        req.key.case === "id"
          ? { id: req.key.value }
          : req.key.case === "gtin14"
            ? { gtin14: req.key.value }
            : {};
      const { row, links, variantGtin14 } = await uc.findPublicPassport(key);
      return {
        passport: passportMessage(row),
        links: linksMessage(row, links),
        variantGtin14: variantGtin14 ?? "",
      };
    },

    claimGtins: async (req, { ctx }) => {
      const held = await uc.claimGtins(
        ctx,
        req.claims.map((c) => ({ gtin: c.gtin, passport_id: c.passportId, owner_id: c.ownerId })),
        req.condition && { categories: req.condition.categories, statuses: req.condition.statuses },
      );
      return {
        heldCount: held.length,
        leadGtins: held.filter((c) => c.role === "lead").map((c) => c.gtin),
      };
    },

    releaseGtins: async (req, { ctx }) =>
      uc.releaseGtins(
        ctx,
        req.releases.map((r) => ({ gtin: r.gtin, owner_id: r.ownerId })),
      ),

    getUsage: async (_req, { ctx }) => uc.getUsage(ctx),

    getPublishApproval: async ({ id }, { ctx }) => ({
      approval: publishApprovalMessage(await uc.getPublishApproval(ctx, id)),
    }),

    decidePublishApproval: async (req, { ctx }) => {
      const out = await uc.decidePublishApproval(ctx, {
        id: req.id,
        approve: req.approve,
        decidedBy: req.decidedBy,
        expectedVersion: req.expectedVersion,
      });
      return {
        approval: publishApprovalMessage(out.approval),
        passport: passportMessage(out.passport),
        warnings: out.warnings.map(warningMessage),
      };
    },

    createProposal: async (req, { ctx }) => ({
      proposal: proposalMessage(
        await uc.createProposal(ctx, { passportId: req.passportId, fieldsJson: req.fieldsJson }),
      ),
    }),

    getProposal: async ({ id }, { ctx }) => ({ proposal: proposalMessage(await uc.getProposal(ctx, id)) }),

    withdrawProposal: async ({ id }, { ctx }) => ({
      proposal: proposalMessage(await uc.withdrawProposal(ctx, id)),
    }),

    decideProposal: async (req, { ctx }) => {
      const out = await uc.decideProposal(ctx, { id: req.id, accept: req.accept, decidedBy: req.decidedBy });
      return { proposal: proposalMessage(out.proposal), passport: passportMessage(out.passport) };
    },

    listReviewItems: async (_req, { ctx }) => {
      const items = await uc.listReviewItems(ctx);
      return {
        proposals: items.proposals.map(proposalMessage),
        approvals: items.approvals.map(publishApprovalMessage),
      };
    },
  };
}
