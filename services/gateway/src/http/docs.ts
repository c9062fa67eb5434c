/**
 * GET /docs: the human-readable API reference, one self-contained HTML page
 * (Redoc with the OpenAPI document inlined; no script, style or font is fetched
 * from elsewhere, so it renders offline). Generated from
 * services/gateway/openapi/openapi.yaml by tools/gen-openapi.mjs.
 * No credential; the Request-Id header is set by the app like on every response.
 * Served with a strict Content-Security-Policy (its inline scripts by hash) and an ETag (middleware/security.ts).
 */
import type { Request, Response } from "express";
import { DOCS_HTML } from "./docs.generated";
import { answerCached, etagOf, htmlPagePolicy } from "./middleware/security";

const POLICY = htmlPagePolicy(DOCS_HTML);
const ETAG = etagOf(DOCS_HTML);

export function docsPage(req: Request, res: Response): void {
  res.setHeader("Content-Security-Policy", POLICY);
  if (answerCached(req, res, ETAG)) return;
  res.status(200).type("text/html; charset=utf-8").send(DOCS_HTML);
}
