/** ImportsService: thin handlers; the rules live in ../domain, the queries in ../store. */
import { ApiError } from "@dpp/contract";
import { decodeCursor, page, pageLimit, requireTenant, type ImplOf } from "@dpp/kit";
import { timestampFromDate, type importsV1 } from "@dpp/proto";
import { checkLabel } from "../domain/import";
import type { ImportRow, ImportsStore } from "../store/store";

/** The list's name in its cursors. */
const LIST = "imports";

const message = (r: ImportRow) => ({
  id: r.id,
  organizationId: r.organization_id,
  livemode: r.livemode,
  label: r.label,
  createdAt: timestampFromDate(r.created_at),
});

export function importsRpc(
  store: ImportsStore,
  o: { labelMaxLength: number },
): ImplOf<typeof importsV1.ImportsService> {
  return {
    createImport: async (req, { ctx }) => {
      const t = requireTenant(ctx);
      const label = checkLabel(req.label, o.labelMaxLength);
      return { import: message(await store.create(t, label)) };
    },

    listImports: async (req, { ctx }) => {
      const t = requireTenant(ctx);
      const limit = pageLimit(req.limit);
      const after = decodeCursor<unknown>(LIST, {}, req.cursor);
      if (after !== undefined && typeof after !== "string")
        throw new ApiError(
          "cursor_invalid",
          "The cursor is malformed; pass next_cursor exactly as received.",
        );
      const p = page(await store.list(t, limit + 1, after), limit, {
        list: LIST,
        filters: {},
        position: (r) => r.id,
      });
      return { imports: p.rows.map(message), hasMore: p.hasMore, nextCursor: p.nextCursor };
    },
  };
}
