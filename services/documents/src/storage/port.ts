/**
 * The storage port: where a document's bytes live. Two adapters: the filesystem store of one machine (filesystem.ts,
 * whose signed URLs the service's own HTTP listener serves) and S3-compatible object storage (s3.ts, presigned
 * URLs). The service never moves the bytes through gRPC or the gateway: a client PUTs to the upload URL, reads
 * through a read URL, and the service asks the store what arrived (docs/decisions/0052-documents-and-storage.md).
 */

/** Storage did not answer (unreachable, misconfigured, a volume missing): nothing can be confirmed now. */
export class StorageUnavailable extends Error {
  constructor(cause: unknown) {
    super(`storage did not answer: ${cause instanceof Error ? cause.message : String(cause)}`);
    this.name = "StorageUnavailable";
  }
}

export interface UploadGrant {
  url: string;
  /** Headers the PUT must carry (Content-Type, signed). */
  headers: Record<string, string>;
}

export interface StoredObject {
  size: number;
  /** The first bytes of the object (at most 16), for the magic-number check. */
  head: Buffer;
}

export interface StoragePort {
  readonly kind: "filesystem" | "s3";
  /** A signed URL that takes one PUT of `key` with `mimeType`, at most `maxBytes`, before `expiresAt`. */
  uploadUrl(o: { key: string; mimeType: string; maxBytes: number; expiresAt: Date }): Promise<UploadGrant>;
  /** A signed URL that reads `key` until `expiresAt`. */
  readUrl(o: { key: string; mimeType: string; fileName: string; expiresAt: Date }): Promise<string>;
  /** The object's size and first bytes; undefined when absent. Throws StorageUnavailable. */
  stat(key: string): Promise<StoredObject | undefined>;
  /** Removes the object (absent: nothing). Throws StorageUnavailable. */
  remove(key: string): Promise<void>;
}
