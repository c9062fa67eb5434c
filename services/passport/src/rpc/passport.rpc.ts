import {
  ApiError,
  decodeCursor,
  encodeCursor,
  invalidParameter,
  parseLimit,
  requireTenant,
  type ImplOf,
} from "@dpp/kit";
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { passportV1 } from "@dpp/proto";
import type { PassportRepository, PassportRow } from "../store/passports.repository";
import { findCategory, listCategories } from "../domain/categories";
import { parseCreateBody } from "../domain/create-passport";
import { PASSPORT_STATUSES } from "../domain/lifecycle";
import { assertLiveWriteAllowed } from "../domain/plan-rules";
import { parsePatchBody, parsePublishBody, parseValidateBody } from "../domain/update-passport";
import type { Passports, ValidationRecord } from "../passports.service";
import type { Links } from "../domain/links";

export { PASSPORT_STATUSES };

type Impl = ImplOf<typeof passportV1.PassportService>;

function toMessage(r: PassportRow): MessageInitShape<typeof passportV1.PassportSchema> {
  return {
    id: r.id,
    organizationId: r.organization_id,
    category: r.category,
    status: r.status,
    gtin: r.gtin ?? undefined,
    serialNumber: r.serial_number ?? undefined,
    externalId: r.external_id ?? undefined,
    version: r.version,
    livemode: r.livemode,
    registryId: r.registry_id ?? undefined,
    createdAt: r.created_at.toISOString(),
    updatedAt: r.updated_at.toISOString(),
    publishedAt: r.published_at?.toISOString(),
    trashedAt: r.trashed_at?.toISOString(),
    dataJson: JSON.stringify(r.data),
  };
}

function categoryMessage(c: NonNullable<ReturnType<typeof findCategory>>) {
  return {
    id: c.id,
    displayName: c.displayName,
    description: c.description,
    schemaVersion: c.schemaVersion,
    regulations: c.regulations,
  };
}

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})T([01]\d|2[0-3]):[0-5]\d:[0-5]\d(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

/** An RFC 3339 timestamp (with its offset, on a day the month has), or undefined. */
function parseRfc3339(text: string): Date | undefined {
  const m = RFC3339.exec(text);
  if (!m) return undefined;
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const calendar = new Date(Date.UTC(year, month - 1, day));
  if (calendar.getUTCMonth() !== month - 1 || calendar.getUTCDate() !== day) return undefined;
  const at = new Date(text);
  return Number.isNaN(at.getTime()) ? undefined : at;
}

function parseJsonBody(text: string): unknown {
  try {
    return JSON.parse(text || "{}");
  } catch {
    throw new ApiError("invalid_request", "The request body is not valid JSON.");
  }
}

function validationMessage(v: ValidationRecord): MessageInitShape<typeof passportV1.ValidationSchema> {
  return {
    id: v.id,
    organizationId: v.organization_id,
    livemode: v.livemode,
    passportId: v.passport_id,
    category: v.category,
    schemaVersion: v.schema_version ?? undefined,
    dryRun: v.dry_run,
    valid: v.valid,
    publishable: v.publishable,
    errorCount: v.error_count,
    warningCount: v.warning_count,
    checkedAt: v.checked_at,
    issues: v.issues,
  };
}

function linksMessage(r: PassportRow, l: Links): MessageInitShape<typeof passportV1.PassportLinksSchema> {
  const dl = l.gs1_digital_link;
  return {
    id: r.id,
    organizationId: r.organization_id,
    status: r.status,
    livemode: r.livemode,
    gtin: r.gtin ?? undefined,
    serialNumber: r.serial_number ?? undefined,
    publicUrl: l.public_url,
    qrTarget: l.qr_target,
    resolvesPublicly: l.resolves_publicly,
    notResolvableReason: l.not_resolvable_reason ?? undefined,
    previewUrl: l.preview_url ?? undefined,
    gs1DigitalLink: {
      uri: dl.uri ?? undefined,
      gtin14: dl.gtin14 ?? undefined,
      serial: dl.serial ?? undefined,
      linksetUrl: dl.linkset_url ?? undefined,
      unavailableReason: dl.unavailable_reason ?? undefined,
    },
  };
}

/** The body of a lifecycle call, which takes none (or an empty object). */
function parseOptionalJson(text: string): unknown {
  return text ? parseJsonBody(text) : undefined;
}

export function passportRpc(repo: PassportRepository, passports: Passports, onCommitted: () => void): Impl {
  return {
    listCategories: () => ({ categories: listCategories().map(categoryMessage) }),

    getCategorySchema: ({ category }) => {
      const c = findCategory(category);
      if (!c)
        throw new ApiError("resource_not_found", `No category ${category}; GET /v1/categories lists them.`, {
          category,
        });
      return { category: categoryMessage(c), schemaJson: JSON.stringify(c.schema) };
    },

    createPassport: async (req, { ctx }) => {
      const t = requireTenant(ctx);
      assertLiveWriteAllowed(ctx);
      const row = await repo.create(t, parseCreateBody(parseJsonBody(req.bodyJson)));
      onCommitted();
      return { passport: toMessage(row) };
    },

    getPassport: async ({ id }, { ctx }) => {
      const t = requireTenant(ctx);
      const row = id.length <= 255 ? await repo.get(t, id) : undefined;
      if (!row) throw new ApiError("resource_not_found", `No passport ${id}.`, { passport_id: id });
      return { passport: toMessage(row) };
    },

    listPassports: async (req, { ctx }) => {
      const t = requireTenant(ctx);
      const limit = parseLimit(req.limit);
      if (req.status && !(PASSPORT_STATUSES as readonly string[]).includes(req.status))
        throw invalidParameter("status", "enum", `status must be one of ${PASSPORT_STATUSES.join(", ")}.`);
      if (req.category && !findCategory(req.category))
        throw invalidParameter("category", "unknown_category", `${req.category} is not a category.`);
      let updatedSince: Date | undefined;
      if (req.updatedSince) {
        updatedSince = parseRfc3339(req.updatedSince);
        if (!updatedSince)
          throw invalidParameter("updated_since", "rfc3339", "updated_since must be an RFC 3339 timestamp.");
      }
      const filters = {
        status: req.status,
        category: req.category,
        updated_since: updatedSince?.toISOString(),
      };
      const after = decodeCursor<string>("passports", filters, req.cursor);
      if (after !== undefined && typeof after !== "string")
        throw new ApiError(
          "cursor_invalid",
          "The cursor is malformed; pass next_cursor exactly as received.",
        );
      const rows = await repo.list(
        t,
        { status: req.status || undefined, category: req.category || undefined, updatedSince },
        limit + 1,
        after,
      );
      const hasMore = rows.length > limit;
      const page = rows.slice(0, limit);
      const last = page[page.length - 1];
      return {
        passports: page.map(toMessage),
        hasMore,
        nextCursor: hasMore && last ? encodeCursor("passports", filters, last.id) : "",
      };
    },

    updatePassport: async (req, { ctx }) => {
      const patch = parsePatchBody(parseJsonBody(req.patchJson));
      return { passport: toMessage(await passports.update(ctx, req.id, patch, req.expectedVersion)) };
    },

    publishPassport: async (req, { ctx }) => {
      const input = parsePublishBody(parseOptionalJson(req.bodyJson));
      const { row, warnings } = await passports.publish(ctx, req.id, input, req.expectedVersion);
      return {
        passport: toMessage(row),
        warnings: warnings.map((w) => ({
          code: w.code,
          message: w.message,
          docUrl: w.doc_url,
          pointer: w.pointer,
        })),
      };
    },

    unpublishPassport: async (req, { ctx }) => ({
      passport: toMessage(await passports.transition(ctx, req.id, "unpublish", req.expectedVersion)),
    }),
    trashPassport: async (req, { ctx }) => ({
      passport: toMessage(await passports.transition(ctx, req.id, "trash", req.expectedVersion)),
    }),
    restorePassport: async (req, { ctx }) => ({
      passport: toMessage(await passports.transition(ctx, req.id, "restore", req.expectedVersion)),
    }),
    deactivatePassport: async (req, { ctx }) => ({
      passport: toMessage(await passports.transition(ctx, req.id, "deactivate", req.expectedVersion)),
    }),
    reactivatePassport: async (req, { ctx }) => ({
      passport: toMessage(await passports.transition(ctx, req.id, "reactivate", req.expectedVersion)),
    }),
    lockPassport: async (req, { ctx }) => ({
      passport: toMessage(await passports.transition(ctx, req.id, "lock", req.expectedVersion)),
    }),
    unlockPassport: async (req, { ctx }) => ({
      passport: toMessage(await passports.transition(ctx, req.id, "unlock", req.expectedVersion)),
    }),

    validatePassport: async (req, { ctx }) => {
      const { dryRun } = parseValidateBody(parseOptionalJson(req.bodyJson));
      return { validation: validationMessage(await passports.validate(ctx, req.id, dryRun)) };
    },

    getPassportLinks: async (req, { ctx }) => {
      const { row, links } = await passports.links(ctx, req.id);
      return { links: linksMessage(row, links) };
    },

    claimGtins: async (req, { ctx }) => {
      const held = await passports.claimGtins(
        ctx,
        req.claims.map((c) => ({ gtin: c.gtin, passport_id: c.passportId, owner_id: c.ownerId })),
      );
      return {
        claims: held.map((c) => ({
          gtin: c.gtin,
          passportId: c.passport_id,
          ownerId: c.owner_id,
          role: c.role,
        })),
      };
    },

    releaseGtins: async (req, { ctx }) =>
      passports.releaseGtins(
        ctx,
        req.releases.map((r) => ({ gtin: r.gtin, owner_id: r.ownerId })),
      ),

    getUsage: async (_req, { ctx }) => passports.usage(ctx),
  };
}
