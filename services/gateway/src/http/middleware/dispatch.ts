/** The last step of a route: its handler, then the answer (marked when a service replayed a recorded result). */
import type { Request, Response } from "express";
import { REPLAYED_HEADER } from "@dpp/kit/internal";
import { compressAnswer, PublicDocument, sendDocument } from "../compression";
import { jsonBody } from "../json";
import type { Route, Step } from "../route";
import { contextOf } from "./locals";

export function dispatch(route: Route): Step {
  const { handler, successStatus } = route;
  const allowed = new Set([successStatus, ...(route.alsoSuccessStatuses ?? [])]);
  return (req, res, l) => {
    const ctx = contextOf(res);
    return handler({
      params: req.params as Record<string, string>,
      query: req.query as Record<string, unknown>,
      body: req.body,
      ctx,
      key: l.key,
      access: l.access,
      conditional: l.conditional,
    }).then((out) => {
      const { headers } = out;
      const status = out.status ?? successStatus;
      if (!allowed.has(status))
        throw new Error(`${route.operationId} answered ${status}, which its route does not declare`);
      if (headers) for (const name in headers) res.setHeader(name, headers[name]!);
      if (ctx.outcome?.idempotentReplayed) res.setHeader(REPLAYED_HEADER, "true");
      if (out.body instanceof PublicDocument) return sendDocument(req, res, out.body);
      sendJson(req, res, status, jsonBody(out.body));
    });
  };
}

const JSON_TYPE = "application/json; charset=utf-8";

/**
 * Sends a JSON text, or its UTF-8 bytes as they are, with `status`, as express's
 * `res.status(status).type("application/json").send(body)` does (the same headers, 304 for a fresh GET or HEAD,
 * no body for HEAD), without its per-answer parsing of the type. An answer of at least COMPRESS_MIN_BYTES is
 * compressed for a request that accepts gzip or brotli (compression.ts); every answer says
 * `Vary: Accept-Encoding`.
 */
export function sendJson(req: Request, res: Response, status: number, body: string | Uint8Array): void {
  res.statusCode = status;
  res.setHeader("Content-Type", JSON_TYPE);
  res.setHeader("Vary", "Accept-Encoding");
  let length = typeof body === "string" ? Buffer.byteLength(body) : body.byteLength;
  // express's freshness check (If-None-Match, If-Modified-Since): only asked when the request has one of them.
  const h = req.headers;
  if ((h["if-none-match"] !== undefined || h["if-modified-since"] !== undefined) && req.fresh) {
    res.statusCode = 304;
    res.removeHeader("Content-Type");
    res.removeHeader("Transfer-Encoding");
    res.end();
    return;
  }
  const compressed = compressAnswer(body, length, h["accept-encoding"]);
  if (compressed) {
    res.setHeader("Content-Encoding", compressed.encoding);
    body = compressed.bytes;
    length = body.byteLength;
  }
  if (!res.hasHeader("Transfer-Encoding")) res.setHeader("Content-Length", String(length));
  if (req.method === "HEAD") res.end();
  else if (typeof body === "string") res.end(body, "utf8");
  else res.end(body);
}
