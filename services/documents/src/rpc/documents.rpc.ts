/** DocumentsService: thin handlers; the rules live in ../domain and ../app, the queries in ../store. */
import { ApiError } from "@dpp/contract";
import { decodeCursor, page, pageLimit, requireTenant, type ImplOf, type RequestContext } from "@dpp/kit";
import { timestampFromDate, type documentsV1 } from "@dpp/proto";
import {
  checkPublish,
  createUpload,
  download,
  getDocument,
  linkDocument,
  listDocuments,
  publicDownload,
  registerDependency,
  unlinkDocument,
  type DocumentsApp,
} from "../app/documents";
import { ACCESS_TIERS, DOCUMENT_TYPES } from "../domain/document";
import type { DocumentRow } from "../store/store";

/** The lists' names in their cursors. */
const LIBRARY = "documents";
const PASSPORT_LIST = "passport_documents";

type Row = DocumentRow & { passport_id?: string; linked_at?: Date };

export const documentMessage = (r: Row) => ({
  id: r.id,
  organizationId: r.organization_id,
  livemode: r.livemode,
  type: r.type,
  accessTier: r.access_tier,
  fileName: r.file_name,
  displayName: r.display_name,
  mimeType: r.mime_type,
  fileSize: BigInt(r.file_size ?? 0),
  uploadState: r.upload_state,
  uploadedAt: r.uploaded_at ? timestampFromDate(r.uploaded_at) : undefined,
  createdAt: timestampFromDate(r.created_at),
  passportId: r.passport_id ?? "",
  linkedAt: r.linked_at ? timestampFromDate(r.linked_at) : undefined,
  problemCode: r.problem_code ?? "",
  problemMessage: r.problem_message ?? "",
});

function filterIssue(parameter: string, list: readonly string[], v: string) {
  if (v && !list.includes(v))
    throw new ApiError("invalid_request", `${parameter} must be one of ${list.join(", ")}.`, {
      issues: [
        { source: { parameter }, rule: "enum", message: `${parameter} must be one of ${list.join(", ")}.` },
      ],
    });
}

const download$ = (d: { url: string; expiresAt: Date; accessTier: string; mimeType: string }) => ({
  url: d.url,
  expiresAt: timestampFromDate(d.expiresAt),
  accessTier: d.accessTier,
  mimeType: d.mimeType,
});

/**
 * An authority token reads authority-tier files through GetDownload and does nothing else: the gateway routes it
 * nowhere else, and each other method refuses it too (docs/decisions/0058).
 */
function refuseAuthority<H extends (req: any, call: { ctx: RequestContext }) => unknown>(handler: H): H {
  return ((req: unknown, call: { ctx: RequestContext }) => {
    if (call.ctx.credentialKind === "authority")
      throw new ApiError("resource_not_found", "No such document.", {});
    return handler(req, call);
  }) as H;
}

export function documentsRpc(app: DocumentsApp): ImplOf<typeof documentsV1.DocumentsService> {
  const impl = documentsHandlers(app);
  for (const name of Object.keys(impl) as (keyof typeof impl)[])
    if (name !== "getDownload")
      (impl as Record<string, unknown>)[name] = refuseAuthority(impl[name] as never);
  return impl;
}

function documentsHandlers(app: DocumentsApp): ImplOf<typeof documentsV1.DocumentsService> {
  return {
    createUpload: async (req, { ctx }) => {
      const { row, upload } = await createUpload(app, ctx, req.passportId, {
        type: req.type,
        accessTier: req.accessTier,
        fileName: req.fileName,
        mimeType: req.mimeType,
        fileSize: Number(req.fileSize),
        displayName: req.displayName,
      });
      return {
        document: documentMessage(row),
        upload: {
          url: upload.url,
          method: "PUT",
          headers: upload.headers,
          expiresAt: timestampFromDate(upload.expiresAt),
          maxBytes: BigInt(upload.maxBytes),
        },
      };
    },

    linkDocument: async (req, { ctx }) => {
      const { row, created } = await linkDocument(app, ctx, req.passportId, req.documentId);
      return { document: documentMessage(row), created };
    },

    unlinkDocument: async (req, { ctx }) => ({
      document: documentMessage(await unlinkDocument(app, ctx, req.passportId, req.documentId)),
    }),

    listDocuments: async (req, { ctx }) => {
      requireTenant(ctx);
      filterIssue("type", DOCUMENT_TYPES, req.type);
      filterIssue("access_tier", ACCESS_TIERS, req.accessTier);
      const limit = pageLimit(req.limit);
      const list = req.passportId ? PASSPORT_LIST : LIBRARY;
      const filters = { passport_id: req.passportId, type: req.type, access_tier: req.accessTier };
      const after = decodeCursor<unknown>(list, filters, req.cursor);
      if (after !== undefined && typeof after !== "string")
        throw new ApiError(
          "cursor_invalid",
          "The cursor is malformed; pass next_cursor exactly as received.",
        );
      const rows = await listDocuments(
        app,
        ctx,
        {
          passportId: req.passportId || undefined,
          type: req.type || undefined,
          accessTier: req.accessTier || undefined,
        },
        limit + 1,
        after,
      );
      const p = page(rows, limit, { list, filters, position: (r) => r.id });
      return { documents: p.rows.map(documentMessage), hasMore: p.hasMore, nextCursor: p.nextCursor };
    },

    getDocument: async (req, { ctx }) => {
      const { row } = await getDocument(app, ctx, req.documentId);
      return { document: documentMessage(row) };
    },

    getDownload: async (req, { ctx }) => download$(await download(app, ctx, req.documentId)),

    getPublicDownload: async (req, { ctx }) =>
      download$(await publicDownload(app, ctx.requestId, req.organizationId, req.documentId)),

    checkPublish: async (req, { ctx }) => {
      const out = await checkPublish(
        app,
        ctx,
        req.passportId,
        req.companions.map((c) => ({ field: c.field, key: c.key, documentId: c.documentId })),
      );
      return { missing: out.missing, confirmed: out.confirmed };
    },

    registerDependency: async (req, call) => {
      const { row, reference, replayed } = await registerDependency(
        app,
        { ctx: call.ctx, caller: call.caller },
        {
          key: req.key,
          passportId: req.passportId,
          documentId: req.documentId,
          kind: req.kind,
          reference: req.reference,
        },
      );
      return { document: documentMessage(row), reference, replayed };
    },

    getUsage: async (_req, { ctx }) => ({ documentsUsed: await app.store.count(requireTenant(ctx)) }),
  };
}
