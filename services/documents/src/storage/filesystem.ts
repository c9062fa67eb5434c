/**
 * The filesystem store (one machine; the default of the local stack): files under one folder, keyed
 * `<organization>/<test|live>/<document id>`. Its signed URLs are served by the service's own HTTP listener
 * (../http/files-server.ts), which checks them as S3 checks a presigned URL: the signature, the expiry, the signed
 * Content-Type, the size.
 */
import fs from "node:fs/promises";
import path from "node:path";
import { sign } from "./signing";
import { StorageUnavailable, type StoragePort, type StoredObject } from "./port";

export interface FilesystemStoreOptions {
  root: string;
  secret: string;
  /** The HTTP listener's URL as clients reach it (known once it listens). */
  baseUrl: () => string;
}

const unix = (d: Date) => Math.floor(d.getTime() / 1000);

export class FilesystemStore implements StoragePort {
  readonly kind = "filesystem" as const;
  readonly root: string;

  constructor(private readonly o: FilesystemStoreOptions) {
    this.root = path.resolve(o.root);
  }

  /** The file of `key`; a key that would leave the root is refused. */
  pathOf(key: string): string {
    if (!/^[A-Za-z0-9_]+\/(test|live)\/[A-Za-z0-9_]+$/.test(key)) throw new Error(`bad storage key ${key}`);
    return path.join(this.root, key);
  }

  uploadUrl(o: { key: string; mimeType: string; maxBytes: number; expiresAt: Date }) {
    const expires = unix(o.expiresAt);
    const sig = sign(this.o.secret, ["PUT", o.key, o.mimeType, o.maxBytes, expires]);
    const q = new URLSearchParams({
      content_type: o.mimeType,
      max_bytes: String(o.maxBytes),
      expires: String(expires),
      signature: sig,
    });
    return Promise.resolve({
      url: `${this.o.baseUrl()}/uploads/${o.key}?${q}`,
      headers: { "Content-Type": o.mimeType },
    });
  }

  readUrl(o: { key: string; mimeType: string; fileName: string; expiresAt: Date }) {
    const expires = unix(o.expiresAt);
    const sig = sign(this.o.secret, ["GET", o.key, o.mimeType, o.fileName, expires]);
    const q = new URLSearchParams({
      content_type: o.mimeType,
      file_name: o.fileName,
      expires: String(expires),
      signature: sig,
    });
    return Promise.resolve(`${this.o.baseUrl()}/files/${o.key}?${q}`);
  }

  /** The root must exist (a missing volume is storage that does not answer, not a missing file). */
  private async rootReady(): Promise<void> {
    try {
      const s = await fs.stat(this.root);
      if (!s.isDirectory()) throw new Error(`${this.root} is not a folder`);
    } catch (err) {
      throw new StorageUnavailable(err);
    }
  }

  async ensureRoot(): Promise<void> {
    await fs.mkdir(this.root, { recursive: true });
  }

  async stat(key: string): Promise<StoredObject | undefined> {
    await this.rootReady();
    let handle: fs.FileHandle;
    try {
      handle = await fs.open(this.pathOf(key), "r");
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      throw new StorageUnavailable(err);
    }
    try {
      const { size } = await handle.stat();
      const head = Buffer.alloc(Math.min(16, size));
      if (head.length > 0) await handle.read(head, 0, head.length, 0);
      return { size, head };
    } finally {
      await handle.close();
    }
  }

  async remove(key: string): Promise<void> {
    await this.rootReady();
    await fs.rm(this.pathOf(key), { force: true });
  }
}
