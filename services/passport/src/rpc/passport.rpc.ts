/**
 * The PassportService handlers: each maps its request message to one use case's input, calls that use case
 * (src/app) and maps the result back to a message. No rules and no queries here.
 */
import type { ImplOf, RequestContext } from "@dpp/kit";
import type { passportV1 } from "@dpp/proto";
import type { PassportUseCases, TransitionInput } from "../app";
import {
  categoryMessage,
  claimMessage,
  linksMessage,
  passportMessage,
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

    createPassport: async (req, { ctx }) => ({
      passport: passportMessage(await uc.createPassport(ctx, { bodyJson: req.bodyJson })),
    }),

    getPassport: async ({ id }, { ctx }) => ({ passport: passportMessage(await uc.getPassport(ctx, id)) }),

    listPassports: async (req, { ctx }) => {
      const page = await uc.listPassports(ctx, {
        limit: req.limit,
        cursor: req.cursor,
        status: req.status,
        category: req.category,
        updatedSince: req.updatedSince,
      });
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
      const { row, warnings } = await uc.publishPassport(ctx, {
        id: req.id,
        bodyJson: req.bodyJson,
        expectedVersion: req.expectedVersion,
      });
      return { passport: passportMessage(row), warnings: warnings.map(warningMessage) };
    },

    unpublishPassport: transition("unpublish"),
    trashPassport: transition("trash"),
    restorePassport: transition("restore"),
    deactivatePassport: transition("deactivate"),
    reactivatePassport: transition("reactivate"),
    lockPassport: transition("lock"),
    unlockPassport: transition("unlock"),

    validatePassport: async (req, { ctx }) => ({
      validation: validationMessage(await uc.validatePassport(ctx, { id: req.id, bodyJson: req.bodyJson })),
    }),

    getPassportLinks: async (req, { ctx }) => {
      const { row, links } = await uc.getPassportLinks(ctx, req.id);
      return { links: linksMessage(row, links) };
    },

    claimGtins: async (req, { ctx }) => {
      const held = await uc.claimGtins(
        ctx,
        req.claims.map((c) => ({ gtin: c.gtin, passport_id: c.passportId, owner_id: c.ownerId })),
      );
      return { claims: held.map(claimMessage) };
    },

    releaseGtins: async (req, { ctx }) =>
      uc.releaseGtins(
        ctx,
        req.releases.map((r) => ({ gtin: r.gtin, owner_id: r.ownerId })),
      ),

    getUsage: async (_req, { ctx }) => uc.getUsage(ctx),
  };
}
