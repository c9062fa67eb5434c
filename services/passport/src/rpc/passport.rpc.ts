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

export const PASSPORT_STATUSES = ["draft", "published", "deactivated", "trashed", "readonly"] as const;

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

export function passportRpc(repo: PassportRepository, onCommitted: () => void): Impl {
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
  };
}
