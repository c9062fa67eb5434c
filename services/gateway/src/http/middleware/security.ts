/**
 * Response headers of every answer, and the caching of the two public documents (docs/decisions/0019).
 *
 * Every response: `X-Content-Type-Options: nosniff`, `Referrer-Policy: no-referrer`, `X-Frame-Options: DENY`, a
 * Content-Security-Policy that allows nothing (JSON is never a page), `Cache-Control: no-store` (answers to a key
 * are never kept by a cache), and `Strict-Transport-Security` when the request came over HTTPS. Express's
 * X-Powered-By is off (app.ts). The HTML page /docs has its own strict policy: its inline scripts by hash, inline
 * styles (Redoc writes them at run time), images and fonts from data: URLs, nothing from another origin.
 *
 * /docs and /v1/openapi.json are the same for everyone until the next deploy: a strong ETag (SHA-256 of the
 * body; each compressed variant its own, ../compression.ts), `Cache-Control: public, max-age=300`, and 304 Not
 * Modified for a matching If-None-Match.
 */
import { createHash } from "node:crypto";
import type { Request, Response } from "express";

const API_CSP = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";
export const DOCUMENT_CACHE_CONTROL = "public, max-age=300";

/** The headers of every answer; `answerCached` and the /docs page replace Cache-Control and the policy. */
export function securityHeaders(req: Request, res: Response): void {
  res.setHeader("X-Content-Type-Options", "nosniff");
  res.setHeader("Referrer-Policy", "no-referrer");
  res.setHeader("X-Frame-Options", "DENY");
  res.setHeader("Content-Security-Policy", API_CSP);
  res.setHeader("Cache-Control", "no-store");
  if (req.secure) res.setHeader("Strict-Transport-Security", "max-age=31536000");
}

/** The policy of an HTML page whose only scripts are its inline ones, allowed by their SHA-256. */
export function htmlPagePolicy(html: string): string {
  const hashes = [...html.matchAll(/<script\b[^>]*>([\s\S]*?)<\/script>/gi)].map(
    (m) => `'sha256-${createHash("sha256").update(m[1]!, "utf8").digest("base64")}'`,
  );
  return [
    "default-src 'none'",
    `script-src ${hashes.join(" ")}`,
    "style-src 'unsafe-inline'",
    "img-src 'self' data:",
    "font-src data:",
    "connect-src 'self'",
    "worker-src blob:",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join("; ");
}

/** A strong ETag of a representation. */
export function etagOf(body: string): string {
  return `"${createHash("sha256").update(body, "utf8").digest("base64url").slice(0, 32)}"`;
}

/** The first of `etags` that If-None-Match names (any when it is `*`), or undefined. */
export function matchingEtag(req: Request, etags: readonly string[]): string | undefined {
  const header = req.headers["if-none-match"];
  if (header === undefined) return undefined;
  const named = header.split(",").map((t) => t.trim().replace(/^W\//, ""));
  return named.includes("*") ? etags[0] : etags.find((etag) => named.includes(etag));
}

/**
 * A public document's validators on the answer; true when a 304 was sent instead (If-None-Match matched), in
 * which case the caller sends nothing more.
 */
export function answerCached(req: Request, res: Response, etag: string): boolean {
  res.setHeader("ETag", etag);
  res.setHeader("Cache-Control", DOCUMENT_CACHE_CONTROL);
  if (matchingEtag(req, [etag]) === undefined) return false;
  res.status(304).end();
  return true;
}
