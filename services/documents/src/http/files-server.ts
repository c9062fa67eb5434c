/**
 * The filesystem store's HTTP listener: it serves the signed upload URLs (PUT /uploads/<key>) and read URLs
 * (GET /files/<key>) that FilesystemStore signs, with no API key (the signature is the credential), and checks
 * them as S3 checks a presigned URL: a tampered URL or one past its expiry is 403, a Content-Type other than the
 * signed one 415, a body over the signed max_bytes 413 (nothing kept), a PUT to a document that is already ready
 * 409. A file that arrived is confirmed at once (`onStored`): the document is ready, or stays pending with the
 * reason its bytes were refused.
 */
import { randomBytes } from "node:crypto";
import { createReadStream } from "node:fs";
import fs from "node:fs/promises";
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import type { Logger } from "@dpp/kit";
import type { FilesystemStore } from "../storage/filesystem";
import { signatureMatches } from "../storage/signing";

export interface UploadOutcome {
  /** Absent: no such document (removed, or never made). */
  found: boolean;
  uploadState?: string;
  problem?: { code: string; message: string } | null;
}

export interface FilesServerOptions {
  host: string;
  port: number;
  secret: string;
  store: FilesystemStore;
  log: Logger;
  /** The document of `key` before its bytes are taken: whether it exists, and its state. */
  beforeUpload(key: string): Promise<UploadOutcome>;
  /** The bytes of `key` are stored: confirm the document. */
  onStored(key: string): Promise<UploadOutcome>;
}

function answer(res: http.ServerResponse, status: number, code: string, message: string, extra = {}) {
  if (res.headersSent) return;
  const body = JSON.stringify({ error: { code, message, ...extra } });
  res.writeHead(status, { "Content-Type": "application/json; charset=utf-8" });
  res.end(body);
}

const KEY = /^\/(uploads|files)\/([A-Za-z0-9_]+\/(?:test|live)\/[A-Za-z0-9_]+)$/;

export async function startFilesServer(
  o: FilesServerOptions,
): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    handle(o, req, res).catch((err: unknown) => {
      o.log.error({ err }, "documents file listener failed");
      answer(res, 500, "internal_error", "The file could not be handled.");
      req.resume();
    });
  });
  server.requestTimeout = 120_000;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(o.port, o.host, () => resolve());
  });
  const addr = server.address() as AddressInfo;
  const host = addr.family === "IPv6" ? `[${addr.address}]` : addr.address;
  return {
    url: `http://${host}:${addr.port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

async function handle(o: FilesServerOptions, req: http.IncomingMessage, res: http.ServerResponse) {
  const url = new URL(req.url ?? "/", "http://files");
  const m = KEY.exec(url.pathname);
  const q = url.searchParams;
  const expires = Number(q.get("expires"));
  const signature = q.get("signature") ?? "";
  if (!m) {
    req.resume();
    return answer(res, 404, "not_found", "No such file address.");
  }
  const [, kind, key] = m as unknown as [string, "uploads" | "files", string];
  if (kind === "uploads" && req.method !== "PUT") {
    req.resume();
    res.setHeader("Allow", "PUT");
    return answer(res, 405, "method_not_allowed", "An upload URL takes one PUT.");
  }
  if (kind === "files" && req.method !== "GET" && req.method !== "HEAD") {
    req.resume();
    res.setHeader("Allow", "GET, HEAD");
    return answer(res, 405, "method_not_allowed", "A read URL takes GET.");
  }
  const contentType = q.get("content_type") ?? "";
  const signed =
    kind === "uploads"
      ? ["PUT", key, contentType, q.get("max_bytes") ?? "", q.get("expires") ?? ""]
      : ["GET", key, contentType, q.get("file_name") ?? "", q.get("expires") ?? ""];
  if (!signature || !signatureMatches(o.secret, signed, signature)) {
    req.resume();
    return answer(
      res,
      403,
      "signature_invalid",
      "The URL's signature does not match: use the URL exactly as issued.",
    );
  }
  if (!Number.isFinite(expires) || expires * 1000 <= Date.now()) {
    req.resume();
    return answer(res, 403, "url_expired", "The URL has expired; ask for a new one.", {
      expired_at: new Date(expires * 1000).toISOString(),
    });
  }
  return kind === "uploads"
    ? upload(o, req, res, key, contentType, Number(q.get("max_bytes")))
    : read(o, req, res, key, contentType, q.get("file_name") ?? "file");
}

async function upload(
  o: FilesServerOptions,
  req: http.IncomingMessage,
  res: http.ServerResponse,
  key: string,
  contentType: string,
  maxBytes: number,
) {
  const sent = (req.headers["content-type"] ?? "").split(";")[0]!.trim().toLowerCase();
  if (sent !== contentType) {
    req.resume();
    return answer(
      res,
      415,
      "content_type_mismatch",
      `The upload must be sent with Content-Type ${contentType}.`,
      {
        expected: contentType,
        received: sent || null,
      },
    );
  }
  const declared = req.headers["content-length"];
  if (declared !== undefined && Number(declared) > maxBytes) {
    req.resume();
    return answer(res, 413, "file_too_large", `The file is larger than ${maxBytes} bytes.`, {
      max_bytes: maxBytes,
    });
  }
  const before = await o.beforeUpload(key);
  if (!before.found) {
    req.resume();
    return answer(res, 404, "not_found", "No pending document has this upload URL (it was removed).");
  }
  if (before.uploadState === "ready") {
    req.resume();
    return answer(
      res,
      409,
      "already_uploaded",
      "The document's file is already stored; create a new upload.",
    );
  }
  const target = o.store.pathOf(key);
  await fs.mkdir(path.dirname(target), { recursive: true });
  const part = `${target}.part-${randomBytes(6).toString("hex")}`;
  const file = await fs.open(part, "w");
  let size = 0;
  let tooLarge = false;
  try {
    for await (const chunk of req as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > maxBytes) {
        tooLarge = true;
        break;
      }
      await file.write(chunk);
    }
  } finally {
    await file.close();
  }
  if (tooLarge) {
    await fs.rm(part, { force: true });
    req.resume();
    return answer(res, 413, "file_too_large", `The file is larger than ${maxBytes} bytes.`, {
      max_bytes: maxBytes,
    });
  }
  await fs.rename(part, target);
  const after = await o.onStored(key);
  res.writeHead(200, { "Content-Type": "application/json; charset=utf-8" });
  res.end(
    JSON.stringify({ upload_state: after.uploadState ?? "pending", problem: after.problem ?? null, size }),
  );
}

async function read(
  o: FilesServerOptions,
  req: http.IncomingMessage,
  res: http.ServerResponse,
  key: string,
  contentType: string,
  fileName: string,
) {
  const file = o.store.pathOf(key);
  let size: number;
  try {
    size = (await fs.stat(file)).size;
  } catch {
    return answer(res, 404, "not_found", "The file is not in storage.");
  }
  res.writeHead(200, {
    "Content-Type": contentType,
    "Content-Length": String(size),
    "Content-Disposition": `inline; filename="${fileName.replace(/["\\\r\n]/g, "_")}"`,
    "Cache-Control": "private, no-store",
    "X-Content-Type-Options": "nosniff",
  });
  if (req.method === "HEAD") return res.end();
  createReadStream(file).pipe(res);
}
