import { z } from "zod";
import { address, IDEMPOTENCY_RETENTION_HOURS, positiveInt } from "@dpp/kit";

/** An absolute http(s) URL without query or fragment, kept without its trailing slashes; empty means unset. */
const optionalBaseUrl = z
  .string()
  .default("")
  .refine((v) => {
    if (v === "") return true;
    try {
      const u = new URL(v);
      return (u.protocol === "https:" || u.protocol === "http:") && !u.search && !u.hash;
    } catch {
      return false;
    }
  }, "expected an absolute http(s) URL without query or fragment, or nothing")
  .transform((v) => v.replace(/\/+$/, ""));

/** The documents service's own variables (the common ones come from the kit's service template). */
export const documentsEnv = {
  /** The passport service: a passport's existence and status for links, uploads and public reads. */
  PASSPORT_ADDR: address.default("127.0.0.1:50051"),
  /**
   * The variants-units service, asked by the reconciler of reading dependencies which unit readings exist; empty:
   * no reconciler (a stack without units).
   */
  VARIANTS_UNITS_ADDR: z.string().default(""),
  /**
   * How often that reconciler runs, and how old a reading dependency must be before it looks at it: one whose
   * reading does not exist past the grace is deleted, and the document can be detached again. The grace outlasts
   * an Idempotency-Key's retention (an hour more): a reading retried under its key writes the reading without
   * registering again (the registration is recorded as made), so its dependency must still be there.
   */
  DEPENDENCY_RECONCILE_INTERVAL_MS: positiveInt(600_000),
  DEPENDENCY_RECONCILE_GRACE_MS: positiveInt((IDEMPOTENCY_RETENTION_HOURS + 1) * 3_600_000),
  /** Where files are kept: `filesystem` (one machine, the default of the local stack) or `s3`. */
  DOCUMENTS_STORAGE: z.enum(["filesystem", "s3"]).default("filesystem"),
  /** The filesystem store's folder (relative to the working directory). */
  DOCUMENTS_STORAGE_DIR: z.string().min(1).default(".dpp/documents"),
  /**
   * The small HTTP listener that serves the filesystem store's signed upload and read URLs (no API key: the
   * signature is the credential). 0: any free port.
   */
  DOCUMENTS_HTTP_HOST: z.string().min(1).default("127.0.0.1"),
  DOCUMENTS_HTTP_PORT: z.coerce.number().int().min(0).max(65_535).default(0),
  /** The listener's URL as clients reach it; unset: http://<host>:<bound port>. */
  DOCUMENTS_PUBLIC_URL: optionalBaseUrl,
  /**
   * The secret that signs the filesystem store's URLs (HMAC-SHA256); every replica needs the same one. Unset: a
   * random one per process (URLs do not survive a restart; fine for one machine).
   */
  DOCUMENTS_URL_SECRET: z.string().default(""),
  /** Lifetime of an upload URL. */
  DOCUMENTS_UPLOAD_TTL_SECONDS: positiveInt(900),
  /** Lifetime of a read URL. */
  DOCUMENTS_READ_TTL_SECONDS: positiveInt(300),
  /** How often the sweep confirms pending uploads and removes expired ones (the kit's leader job). */
  DOCUMENTS_SWEEP_INTERVAL_MS: positiveInt(30_000),
  /** A pending upload is removed (its document and links, and any object) this long after its URL expired. */
  DOCUMENTS_PENDING_GRACE_SECONDS: z.coerce.number().int().min(0).default(600),
  /** S3-compatible storage (AWS S3, MinIO, Ceph ...), with DOCUMENTS_STORAGE=s3. */
  S3_BUCKET: z.string().default(""),
  S3_REGION: z.string().default("us-east-1"),
  /** Empty: AWS's own endpoint for the region. */
  S3_ENDPOINT: optionalBaseUrl,
  /** Path-style addressing (http://endpoint/bucket/key), which MinIO and most self-hosted stores need. */
  S3_FORCE_PATH_STYLE: z
    .enum(["true", "false", "1", "0", ""])
    .default("false")
    .transform((v) => v === "true" || v === "1"),
  S3_ACCESS_KEY_ID: z.string().default(""),
  S3_SECRET_ACCESS_KEY: z.string().default(""),
};
