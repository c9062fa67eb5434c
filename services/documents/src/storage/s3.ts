/**
 * S3-compatible object storage (AWS S3, MinIO, Ceph ...) through @aws-sdk/client-s3. An upload is a presigned PUT
 * whose signature covers the Content-Type (a PUT with another type is refused by the store); a presigned PUT
 * cannot bound the size, so the size is checked on the stored object when the document is confirmed (an oversize
 * object is never made ready). Nothing tells the service that an object arrived: the document is confirmed when it
 * is read and by the sweep (docs/decisions/0052-documents-and-storage.md).
 */
import {
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  PutObjectCommand,
  S3Client,
  S3ServiceException,
} from "@aws-sdk/client-s3";
import { getSignedUrl } from "@aws-sdk/s3-request-presigner";
import { StorageUnavailable, type StoragePort, type StoredObject } from "./port";

export interface S3Settings {
  bucket: string;
  region: string;
  /** Absent: AWS's endpoint for the region. */
  endpoint?: string;
  forcePathStyle: boolean;
  /** Absent: the SDK's default chain (environment, instance role ...). */
  accessKeyId?: string;
  secretAccessKey?: string;
  /** How long one storage request may take. */
  timeoutMs?: number;
}

const seconds = (until: Date) => Math.max(1, Math.floor((until.getTime() - Date.now()) / 1000));

const notFound = (err: unknown) =>
  err instanceof S3ServiceException &&
  (err.name === "NotFound" || err.name === "NoSuchKey" || err.$metadata.httpStatusCode === 404);

export function s3Store(s: S3Settings): StoragePort {
  const client = new S3Client({
    region: s.region,
    endpoint: s.endpoint,
    forcePathStyle: s.forcePathStyle,
    credentials:
      s.accessKeyId && s.secretAccessKey
        ? { accessKeyId: s.accessKeyId, secretAccessKey: s.secretAccessKey }
        : undefined,
    maxAttempts: 2,
    requestHandler: { requestTimeout: s.timeoutMs ?? 3_000, connectionTimeout: s.timeoutMs ?? 3_000 },
  });
  const Bucket = s.bucket;

  return {
    kind: "s3",

    async uploadUrl(o) {
      const url = await getSignedUrl(
        client,
        new PutObjectCommand({ Bucket, Key: o.key, ContentType: o.mimeType }),
        { expiresIn: seconds(o.expiresAt), signableHeaders: new Set(["content-type"]) },
      );
      return { url, headers: { "Content-Type": o.mimeType } };
    },

    readUrl(o) {
      return getSignedUrl(
        client,
        new GetObjectCommand({
          Bucket,
          Key: o.key,
          ResponseContentType: o.mimeType,
          ResponseContentDisposition: `inline; filename="${o.fileName.replace(/["\\\r\n]/g, "_")}"`,
        }),
        { expiresIn: seconds(o.expiresAt) },
      );
    },

    async stat(key): Promise<StoredObject | undefined> {
      try {
        const head = await client.send(new HeadObjectCommand({ Bucket, Key: key }));
        const size = Number(head.ContentLength ?? 0);
        if (size === 0) return { size, head: Buffer.alloc(0) };
        const got = await client.send(new GetObjectCommand({ Bucket, Key: key, Range: "bytes=0-15" }));
        const bytes = Buffer.from(await got.Body!.transformToByteArray());
        return { size, head: bytes.subarray(0, 16) };
      } catch (err) {
        if (notFound(err)) return undefined;
        throw new StorageUnavailable(err);
      }
    },

    async remove(key) {
      try {
        await client.send(new DeleteObjectCommand({ Bucket, Key: key }));
      } catch (err) {
        if (notFound(err)) return;
        throw new StorageUnavailable(err);
      }
    },
  };
}
