/**
 * Documents: the organization's library (`dpp.organization(id).documents`) and a passport's documents
 * (`.passportDocuments`). `uploadFile` creates the document and PUTs the file to its signed URL in one call.
 */
import {
  Core,
  readSettings,
  writeSettings,
  type RequestOptions,
  type WithResponse,
  type WriteOptions,
} from "./core";
import type { components, operations } from "./openapi.generated";
import type { ListIterator } from "./pagination";

export type Document = components["schemas"]["Document"];
export type PassportDocument = components["schemas"]["PassportDocument"];
export type DocumentDownload = components["schemas"]["DocumentDownload"];
export type DocumentUpload = components["schemas"]["DocumentUpload"];
export type ListDocumentsParams = NonNullable<operations["listDocuments"]["parameters"]["query"]>;
export type UploadDocumentParams = Omit<components["schemas"]["AttachDocumentRequest"], "document_id"> &
  Required<
    Pick<components["schemas"]["AttachDocumentRequest"], "type" | "access_tier" | "file_name" | "mime_type">
  >;

/** The signed upload URL refused the file (its status and the store's error code, e.g. content_type_mismatch). */
export class DppUploadError extends Error {
  override readonly name = "DppUploadError";
  constructor(
    message: string,
    readonly status: number,
    readonly code: string | undefined,
    readonly document: PassportDocument,
  ) {
    super(message);
  }
}

/** The organization's document library, in the key's mode. */
export class Documents {
  constructor(
    private readonly core: Core,
    private readonly organization: string,
  ) {}

  /** Newest first, page after page; `type` and `access_tier` filter. */
  list(params: ListDocumentsParams = {}, options: RequestOptions = {}): ListIterator<Document> {
    const { cursor: start, ...filters } = params;
    return this.core.list(
      (cursor) =>
        this.core.send(readSettings(options), (fetch) =>
          this.core.api.GET("/organizations/{organization}/documents", {
            params: {
              path: { organization: this.organization },
              query: { ...filters, ...(cursor ? { cursor } : {}) },
            },
            fetch,
          }),
        ),
      start,
    );
  }

  /** One document; a pending one is confirmed against storage first. */
  async get(id: string, options: RequestOptions = {}): Promise<WithResponse<Document>> {
    return this.core.send(readSettings(options), (fetch) =>
      this.core.api.GET("/organizations/{organization}/documents/{id}", {
        params: { path: { organization: this.organization, id } },
        fetch,
      }),
    );
  }

  /** A short-lived signed URL that reads the file (any tier: the key needs documents:read of the organization). */
  async download(id: string, options: RequestOptions = {}): Promise<WithResponse<DocumentDownload>> {
    return this.core.send(readSettings(options), (fetch) =>
      this.core.api.GET("/organizations/{organization}/documents/{id}/download", {
        params: { path: { organization: this.organization, id } },
        fetch,
      }),
    );
  }

  /**
   * An authority's read of an `authority`-tier file of the organization: the client is made with the authority
   * token (`new Dpp({ apiKey: "dpp_at_…" })`), which no other method accepts.
   */
  async authorityDownload(id: string, options: RequestOptions = {}): Promise<WithResponse<DocumentDownload>> {
    return this.core.send(readSettings(options), (fetch) =>
      this.core.api.GET("/authority/organizations/{organization}/documents/{id}/download", {
        params: { path: { organization: this.organization, id } },
        fetch,
      }),
    );
  }

  /** What a public reader gets: a published passport's public file only (no key needed). */
  async publicDownload(id: string, options: RequestOptions = {}): Promise<WithResponse<DocumentDownload>> {
    return this.core.send(readSettings(options), (fetch) =>
      this.core.api.GET("/public/organizations/{organization}/documents/{id}/download", {
        params: { path: { organization: this.organization, id } },
        fetch,
      }),
    );
  }
}

/** The documents attached to the organization's passports. */
export class PassportDocuments {
  constructor(
    private readonly core: Core,
    private readonly organization: string,
  ) {}

  private path(id: string) {
    return { path: { organization: this.organization, id } };
  }

  /** The passport's documents, newest first, page after page. */
  list(
    passportId: string,
    params: ListDocumentsParams = {},
    options: RequestOptions = {},
  ): ListIterator<PassportDocument> {
    const { cursor: start, ...filters } = params;
    return this.core.list(
      (cursor) =>
        this.core.send(readSettings(options), (fetch) =>
          this.core.api.GET("/organizations/{organization}/passports/{id}/documents", {
            params: { ...this.path(passportId), query: { ...filters, ...(cursor ? { cursor } : {}) } },
            fetch,
          }),
        ),
      start,
    );
  }

  /** Form B: a new document with its signed `upload` (PUT the file there, or use uploadFile). */
  async create(
    passportId: string,
    params: UploadDocumentParams,
    options: WriteOptions = {},
  ): Promise<WithResponse<PassportDocument & { upload: DocumentUpload }>> {
    return this.core.send(writeSettings(options), (fetch) =>
      this.core.api.POST("/organizations/{organization}/passports/{id}/documents", {
        params: this.path(passportId),
        body: params,
        fetch,
      }),
    ) as Promise<WithResponse<PassportDocument & { upload: DocumentUpload }>>;
  }

  /** Form A: attaches a library document (`lastResponse.status` 201 when new, 200 when it already was). */
  async link(
    passportId: string,
    documentId: string,
    options: WriteOptions = {},
  ): Promise<WithResponse<PassportDocument>> {
    return this.core.send(writeSettings(options), (fetch) =>
      this.core.api.POST("/organizations/{organization}/passports/{id}/documents", {
        params: this.path(passportId),
        body: { document_id: documentId },
        fetch,
      }),
    );
  }

  /** Detaches the document (it stays in the library). */
  async detach(
    passportId: string,
    documentId: string,
    options: RequestOptions = {},
  ): Promise<WithResponse<PassportDocument>> {
    return this.core.send(readSettings(options), (fetch) =>
      this.core.api.DELETE("/organizations/{organization}/passports/{id}/documents/{documentId}", {
        params: { path: { organization: this.organization, id: passportId, documentId } },
        fetch,
      }),
    );
  }

  /**
   * Creates the document and PUTs `file` to its signed URL with the headers it names; answers the document as it
   * is then: `ready`, or `pending` with `upload_problem` when the bytes are not of the declared type. A refusal of
   * the URL (wrong type, too large, expired) is a DppUploadError.
   */
  async uploadFile(
    passportId: string,
    params: Omit<UploadDocumentParams, "file_size"> & { file: Uint8Array | Blob },
    options: WriteOptions = {},
  ): Promise<Document> {
    const { file, ...fields } = params;
    const size = file instanceof Blob ? file.size : file.byteLength;
    const created = await this.create(passportId, { ...fields, file_size: size }, options);
    const { upload } = created;
    const res = await this.core.fetch(upload.url, {
      method: upload.method,
      headers: upload.headers,
      body: file as unknown as NonNullable<Parameters<typeof globalThis.fetch>[1]>["body"],
    });
    if (!res.ok) {
      let code: string | undefined;
      try {
        code = ((await res.json()) as { error?: { code?: string } }).error?.code;
      } catch {
        code = undefined;
      }
      throw new DppUploadError(
        `The upload URL answered ${res.status}${code ? ` ${code}` : ""}.`,
        res.status,
        code,
        created,
      );
    } else await res.arrayBuffer();
    const { lastResponse: _r, ...doc } = await new Documents(this.core, this.organization).get(
      created.id,
      {},
    );
    return doc as Document;
  }
}
