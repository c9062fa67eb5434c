/**
 * The gateway's routes of the documents service (this file runs in the gateway: it is listed by
 * services/gateway/src/modules/index.generated.ts). Each handler reads the request, calls one method and maps
 * the answer to the public JSON of openapi.yaml.
 */
import { ApiError, type Issue } from "@dpp/contract";
import { parseLimit, type ClientOf } from "@dpp/kit";
import type { documentsV1 } from "@dpp/proto";
import {
  bodyObject,
  KiB,
  list,
  rfc3339,
  rfc3339OrNull,
  single,
  unknownMembers,
  type GatewayModule,
  type ModuleFactory,
} from "@dpp/gateway/modules";

export type DocumentsClient = ClientOf<typeof documentsV1.DocumentsService>;

const problemJson = (x: documentsV1.Document) =>
  x.problemCode ? { code: x.problemCode, message: x.problemMessage } : null;

/** A document of the organization's library. */
export const documentJson = (x: documentsV1.Document) => ({
  object: "document" as const,
  id: x.id,
  name: `organizations/${x.organizationId}/documents/${x.id}`,
  organization_id: x.organizationId,
  type: x.type,
  access_tier: x.accessTier,
  file_name: x.fileName,
  display_name: x.displayName,
  mime_type: x.mimeType,
  file_size: Number(x.fileSize),
  upload_state: x.uploadState,
  uploaded_at: rfc3339OrNull(x.uploadedAt),
  upload_problem: problemJson(x),
  livemode: x.livemode,
  created_at: rfc3339(x.createdAt),
});

/** A document as a passport carries it (the passport-scoped form). */
export const passportDocumentJson = (x: documentsV1.Document) => {
  const passport = `organizations/${x.organizationId}/passports/${x.passportId}`;
  return {
    ...documentJson(x),
    name: `${passport}/documents/${x.id}`,
    passport_id: x.passportId,
    passport,
    linked_at: rfc3339(x.linkedAt),
  };
};

const downloadJson = (
  x: documentsV1.GetDownloadResponse | documentsV1.GetPublicDownloadResponse,
  documentId: string,
) => ({
  object: "document_download" as const,
  document_id: documentId,
  url: x.url,
  method: "GET" as const,
  expires_at: rfc3339(x.expiresAt),
  access_tier: x.accessTier,
  mime_type: x.mimeType,
});

const UPLOAD_FIELDS = ["type", "access_tier", "file_name", "mime_type", "file_size", "display_name"] as const;
const REQUIRED_UPLOAD_FIELDS = ["type", "access_tier", "file_name", "mime_type"] as const;

/** The body of POST .../passports/{id}/documents: form A (document_id) or form B (an upload), never both. */
export function parseAttachBody(body: unknown) {
  const b = bodyObject(body);
  const issues: Issue[] = unknownMembers(b, ["document_id", ...UPLOAD_FIELDS]);
  const present = UPLOAD_FIELDS.filter((f) => b[f] !== undefined);
  if (b.document_id !== undefined) {
    for (const f of present)
      issues.push({
        source: { pointer: `/${f}` },
        rule: "exclusive",
        message: `${f} cannot be sent with document_id: link a library document (document_id) or upload a new file, not both.`,
      });
    if (typeof b.document_id !== "string" || !b.document_id)
      issues.push({
        source: { pointer: "/document_id" },
        rule: "type",
        message: "document_id must be a string.",
      });
    if (issues.length)
      throw new ApiError("validation_failed", "The document cannot be attached.", { issues });
    return { form: "link" as const, documentId: b.document_id as string };
  }
  for (const f of REQUIRED_UPLOAD_FIELDS) {
    if (b[f] === undefined)
      issues.push({
        source: { pointer: `/${f}` },
        rule: "required",
        message: `${f} is required to upload a file (or send only document_id to link a library document).`,
      });
    else if (typeof b[f] !== "string")
      issues.push({ source: { pointer: `/${f}` }, rule: "type", message: `${f} must be a string.` });
  }
  if (b.display_name !== undefined && typeof b.display_name !== "string")
    issues.push({
      source: { pointer: "/display_name" },
      rule: "type",
      message: "display_name must be a string.",
    });
  if (
    b.file_size !== undefined &&
    (typeof b.file_size !== "number" || !Number.isInteger(b.file_size) || b.file_size < 1)
  )
    issues.push({
      source: { pointer: "/file_size" },
      rule: "type",
      message: "file_size must be a positive integer (bytes).",
    });
  if (issues.length) throw new ApiError("validation_failed", "The document cannot be attached.", { issues });
  return {
    form: "upload" as const,
    upload: {
      type: b.type as string,
      accessTier: b.access_tier as string,
      fileName: b.file_name as string,
      mimeType: b.mime_type as string,
      fileSize: BigInt((b.file_size as number | undefined) ?? 0),
      displayName: (b.display_name as string | undefined) ?? "",
    },
  };
}

const LIST_QUERY = { limit: "single", cursor: "single", type: "single", access_tier: "single" } as const;

export function documentsModule(deps: { client: DocumentsClient }): GatewayModule {
  const { client } = deps;
  const listQuery = (query: Record<string, unknown>) => ({
    limit: parseLimit(single(query, "limit")),
    cursor: single(query, "cursor"),
    type: single(query, "type"),
    accessTier: single(query, "access_tier"),
  });
  return {
    name: "documents",
    routes: [
      {
        operationId: "listDocuments",
        method: "GET",
        path: "/organizations/{organization}/documents",
        auth: "organization",
        scope: "documents:read",
        idempotent: false,
        successStatus: 200,
        query: LIST_QUERY,
        handler: async ({ ctx, query }) => {
          const res = await client.listDocuments(listQuery(query), { context: ctx });
          return { body: list(res.documents.map(documentJson), res.hasMore, res.nextCursor || null) };
        },
      },
      {
        operationId: "getDocument",
        method: "GET",
        path: "/organizations/{organization}/documents/{id}",
        auth: "organization",
        scope: "documents:read",
        idempotent: false,
        successStatus: 200,
        handler: async ({ ctx, params }) => {
          const res = await client.getDocument({ documentId: params.id! }, { context: ctx });
          return { body: documentJson(res.document!) };
        },
      },
      {
        operationId: "getDocumentDownload",
        method: "GET",
        path: "/organizations/{organization}/documents/{id}/download",
        auth: "organization",
        scope: "documents:read",
        idempotent: false,
        successStatus: 200,
        handler: async ({ ctx, params }) => {
          const res = await client.getDownload({ documentId: params.id! }, { context: ctx });
          return { body: downloadJson(res, params.id!), headers: { "Cache-Control": "no-store" } };
        },
      },
      {
        operationId: "getAuthorityDocumentDownload",
        method: "GET",
        path: "/authority/organizations/{organization}/documents/{id}/download",
        auth: "authority",
        idempotent: false,
        successStatus: 200,
        handler: async ({ ctx, params }) => {
          const res = await client.getDownload({ documentId: params.id! }, { context: ctx });
          return { body: downloadJson(res, params.id!), headers: { "Cache-Control": "no-store" } };
        },
      },
      {
        operationId: "getPublicDocumentDownload",
        method: "GET",
        path: "/public/organizations/{organization}/documents/{id}/download",
        auth: "none",
        idempotent: false,
        successStatus: 200,
        handler: async ({ ctx, params }) => {
          const res = await client.getPublicDownload(
            { organizationId: params.organization!, documentId: params.id! },
            { context: ctx },
          );
          return { body: downloadJson(res, params.id!), headers: { "Cache-Control": "no-store" } };
        },
      },
      {
        operationId: "listPassportDocuments",
        method: "GET",
        path: "/organizations/{organization}/passports/{id}/documents",
        auth: "organization",
        scope: "documents:read",
        idempotent: false,
        successStatus: 200,
        query: LIST_QUERY,
        handler: async ({ ctx, params, query }) => {
          const res = await client.listDocuments(
            { ...listQuery(query), passportId: params.id! },
            { context: ctx },
          );
          return { body: list(res.documents.map(passportDocumentJson), res.hasMore, res.nextCursor || null) };
        },
      },
      {
        operationId: "createPassportDocument",
        method: "POST",
        path: "/organizations/{organization}/passports/{id}/documents",
        auth: "organization",
        scope: "documents:write",
        idempotent: true,
        bodyLimitBytes: 4 * KiB,
        successStatus: 201,
        alsoSuccessStatuses: [200],
        handler: async ({ ctx, params, body }) => {
          const parsed = parseAttachBody(body);
          if (parsed.form === "link") {
            const res = await client.linkDocument(
              { passportId: params.id!, documentId: parsed.documentId },
              { context: ctx },
            );
            return { body: passportDocumentJson(res.document!), status: res.created ? 201 : 200 };
          }
          const res = await client.createUpload(
            { passportId: params.id!, ...parsed.upload },
            { context: ctx },
          );
          const u = res.upload!;
          return {
            body: {
              ...passportDocumentJson(res.document!),
              upload: {
                url: u.url,
                method: "PUT",
                headers: u.headers,
                expires_at: rfc3339(u.expiresAt),
                max_bytes: Number(u.maxBytes),
              },
            },
          };
        },
      },
      {
        operationId: "deletePassportDocument",
        method: "DELETE",
        path: "/organizations/{organization}/passports/{id}/documents/{documentId}",
        auth: "organization",
        scope: "documents:write",
        idempotent: false,
        successStatus: 200,
        handler: async ({ ctx, params }) => {
          const res = await client.unlinkDocument(
            { passportId: params.id!, documentId: params.documentId! },
            { context: ctx },
          );
          return { body: passportDocumentJson(res.document!) };
        },
      },
    ],
  };
}

/** The module in the gateway's module list. */
export const fromDeps: ModuleFactory = (deps) => documentsModule({ client: deps.documents });
