/**
 * GET /docs: the human-readable API reference, one self-contained HTML page
 * (Redoc with the OpenAPI document inlined; no script, style or font is fetched
 * from elsewhere, so it renders offline). Generated from
 * services/gateway/openapi/openapi.yaml by tools/gen-openapi.mjs.
 * No credential; the Request-Id header is set by the app like on every response.
 */
import type { Request, Response } from "express";
import { DOCS_HTML } from "./docs.generated";

export function docsPage(_req: Request, res: Response): void {
  res.status(200).type("text/html; charset=utf-8").send(DOCS_HTML);
}
