/**
 * GET /docs: the human-readable API reference, one self-contained HTML page
 * (Redoc with the OpenAPI document inlined; no script, style or font is fetched
 * from elsewhere, so it renders offline). Generated from
 * services/gateway/openapi/openapi.yaml by tools/gen-openapi.mjs.
 * No credential; counted against the client address's anonymous limit like the category endpoints (app.ts); the
 * Request-Id header is set by the app like on every response.
 * Served with a strict Content-Security-Policy (its inline scripts by hash), an ETag (middleware/security.ts) and,
 * for a client that accepts it, compressed once per process with brotli or gzip (compression.ts).
 */
import type { Request, Response } from "express";
import { DOCS_HTML } from "./docs.generated";
import { PublicDocument, sendDocument } from "./compression";
import { etagOf, htmlPagePolicy } from "./middleware/security";

const POLICY = htmlPagePolicy(DOCS_HTML);

/** The page and its compressed variants. */
export const DOCS_PAGE = new PublicDocument("text/html; charset=utf-8", DOCS_HTML, etagOf(DOCS_HTML));

export function docsPage(req: Request, res: Response): void | Promise<void> {
  res.setHeader("Content-Security-Policy", POLICY);
  return sendDocument(req, res, DOCS_PAGE);
}
