/**
 * Compressed answers (docs/decisions/0045): gzip or brotli, as the request's Accept-Encoding allows, with node's
 * zlib.
 *
 * - A JSON answer (`sendJson`, errors included) of at least COMPRESS_MIN_BYTES is compressed once, synchronously,
 *   at a fast level, for a request that accepts it; a smaller one is sent as it is (below that, the bytes saved
 *   are fewer than one TCP segment and not worth the CPU). Every JSON answer says `Vary: Accept-Encoding`.
 * - The two public documents (/docs, /v1/openapi.json) are `PublicDocument`s: each encoding is compressed once
 *   per process at a high level (brotli 10, gzip 9), off the event loop, the first time a request accepts it, and
 *   kept with an ETag of its own.
 */
import zlib from "node:zlib";
import type { Request, Response } from "express";
import { answerCached, DOCUMENT_CACHE_CONTROL, matchingEtag } from "./middleware/security";

export type Encoding = "br" | "gzip";

/** The smallest JSON answer that is compressed. */
export const COMPRESS_MIN_BYTES = 1024;

/** The encodings `accept-encoding` accepts, best first: by q-value, then in `preference` order. */
export function acceptedEncodings(
  header: string | undefined,
  preference: readonly Encoding[] = DYNAMIC_PREFERENCE,
): Encoding[] {
  if (header === undefined || header === "") return [];
  let br: number | undefined;
  let gzip: number | undefined;
  let any: number | undefined;
  for (const part of header.split(",")) {
    const semi = part.indexOf(";");
    const coding = (semi < 0 ? part : part.slice(0, semi)).trim().toLowerCase();
    if (coding !== "br" && coding !== "gzip" && coding !== "x-gzip" && coding !== "*") continue;
    const q = semi < 0 ? 1 : qValue(part.slice(semi + 1));
    if (q === undefined) continue;
    if (coding === "br") br = q;
    else if (coding === "*") any = q;
    else gzip = q;
  }
  const weight: Record<Encoding, number> = { br: br ?? any ?? 0, gzip: gzip ?? any ?? 0 };
  return preference
    .filter((e) => weight[e] > 0)
    .sort((a, b) => weight[b] - weight[a] || preference.indexOf(a) - preference.indexOf(b));
}

/** The q of a coding's parameters (`;q=0.5`; 1 without one), or undefined when it is malformed. */
function qValue(params: string): number | undefined {
  for (const param of params.split(";")) {
    const eq = param.indexOf("=");
    if (eq < 0 || param.slice(0, eq).trim().toLowerCase() !== "q") continue;
    const q = Number(param.slice(eq + 1).trim());
    return Number.isFinite(q) && q >= 0 && q <= 1 ? q : undefined;
  }
  return 1;
}

/** For JSON answers: brotli first at an equal q (docs/performance.md, "Compression"). */
const DYNAMIC_PREFERENCE: readonly Encoding[] = ["br", "gzip"];

/** The fast levels of JSON answers (docs/performance.md, "Compression"). */
const BROTLI_FAST = 1;
const GZIP_FAST = 1;

/**
 * `body` compressed for a request whose Accept-Encoding is `accept`, or undefined when it is sent as it is: smaller
 * than COMPRESS_MIN_BYTES, or no encoding accepted.
 */
export function compressAnswer(
  body: string | Uint8Array,
  length: number,
  accept: string | undefined,
): { encoding: Encoding; bytes: Buffer } | undefined {
  if (length < COMPRESS_MIN_BYTES || accept === undefined) return undefined;
  const encoding = acceptedEncodings(accept)[0];
  if (encoding === undefined) return undefined;
  const bytes =
    encoding === "br"
      ? zlib.brotliCompressSync(body, {
          params: {
            [zlib.constants.BROTLI_PARAM_QUALITY]: BROTLI_FAST,
            [zlib.constants.BROTLI_PARAM_MODE]: zlib.constants.BROTLI_MODE_TEXT,
            [zlib.constants.BROTLI_PARAM_SIZE_HINT]: length,
          },
        })
      : zlib.gzipSync(body, { level: GZIP_FAST });
  return { encoding, bytes };
}

/** A representation of a public document: its bytes as sent, their encoding (none: as is) and its ETag. */
export interface Variant {
  encoding: Encoding | undefined;
  body: Buffer;
  etag: string;
}

/** For the public documents: brotli first at an equal q (the smaller, compressed once). */
const DOCUMENT_PREFERENCE: readonly Encoding[] = ["br", "gzip"];

/**
 * A document the same for everyone until the next deploy (/docs, /v1/openapi.json), with its compressed variants.
 * Each encoding is compressed once, at a high level, in zlib's thread pool, when a request first accepts it;
 * brotli costs seconds for /docs, so until it is ready a request that also accepts gzip gets gzip.
 */
export class PublicDocument {
  private readonly plain: Variant;
  private readonly made = new Map<Encoding, Promise<Variant>>();
  private readonly ready = new Map<Encoding, Variant>();

  /** `etag` is the representation's strong ETag; a variant's is the same with the encoding appended. */
  constructor(
    readonly type: string,
    text: string,
    readonly etag: string,
  ) {
    this.plain = { encoding: undefined, body: Buffer.from(text, "utf8"), etag };
  }

  /** The ETags of the representations Accept-Encoding `accept` allows, made or not (they need no compressing). */
  etags(accept: string | undefined): string[] {
    return [...acceptedEncodings(accept, DOCUMENT_PREFERENCE).map((e) => this.etagOf(e)), this.etag];
  }

  /** The representation to send for Accept-Encoding `accept`: the best one ready, else the quickest to make. */
  variant(accept: string | undefined): Variant | Promise<Variant> {
    const wanted = acceptedEncodings(accept, DOCUMENT_PREFERENCE);
    if (wanted.length === 0) return this.plain;
    for (const encoding of wanted) this.make(encoding);
    for (const encoding of wanted) {
      const done = this.ready.get(encoding);
      if (done) return done;
    }
    return this.make(wanted.includes("gzip") ? "gzip" : wanted[0]!);
  }

  /** The variant of `encoding`, compressed the first time it is asked for. */
  compressed(encoding: Encoding): Promise<Variant> {
    return this.make(encoding);
  }

  private etagOf(encoding: Encoding): string {
    return `${this.etag.slice(0, -1)}-${encoding}"`;
  }

  private make(encoding: Encoding): Promise<Variant> {
    let made = this.made.get(encoding);
    if (!made) {
      made = compressDocument(this.plain.body, encoding).then((body) => {
        const variant: Variant = { encoding, body, etag: this.etagOf(encoding) };
        this.ready.set(encoding, variant);
        return variant;
      });
      // A failure (never expected of zlib) is retried by the next request rather than kept.
      made.catch(() => this.made.delete(encoding));
      this.made.set(encoding, made);
    }
    return made;
  }
}

/** `bytes` compressed at the documents' level of `encoding`, in zlib's thread pool. */
function compressDocument(bytes: Buffer, encoding: Encoding): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const done = (err: Error | null, out: Buffer) => (err ? reject(err) : resolve(out));
    if (encoding === "gzip") zlib.gzip(bytes, { level: zlib.constants.Z_BEST_COMPRESSION }, done);
    else
      zlib.brotliCompress(
        bytes,
        {
          params: {
            [zlib.constants.BROTLI_PARAM_QUALITY]: DOCUMENT_BROTLI_QUALITY,
            [zlib.constants.BROTLI_PARAM_MODE]: zlib.constants.BROTLI_MODE_TEXT,
            [zlib.constants.BROTLI_PARAM_SIZE_HINT]: bytes.length,
          },
        },
        done,
      );
  });
}

/**
 * Brotli's level for the public documents: 10 rather than the best, 11, which makes /docs 2% smaller for more than
 * twice the CPU (docs/performance.md, "Compression").
 */
const DOCUMENT_BROTLI_QUALITY = 10;

/**
 * Answers a public document: 304 when If-None-Match names a representation the request accepts (no compressing
 * needed), else the best variant accepted, with its ETag, `Cache-Control: public, max-age=300` and
 * `Vary: Accept-Encoding`; no body for HEAD.
 */
export function sendDocument(req: Request, res: Response, doc: PublicDocument): void | Promise<void> {
  const accept = req.headers["accept-encoding"];
  res.setHeader("Vary", "Accept-Encoding");
  const fresh = matchingEtag(req, doc.etags(accept));
  if (fresh !== undefined && answerCached(req, res, fresh)) return;
  const variant = doc.variant(accept);
  if (variant instanceof Promise) return variant.then((v) => sendVariant(req, res, doc, v));
  sendVariant(req, res, doc, variant);
}

function sendVariant(req: Request, res: Response, doc: PublicDocument, v: Variant): void {
  res.setHeader("ETag", v.etag);
  res.setHeader("Cache-Control", DOCUMENT_CACHE_CONTROL);
  res.statusCode = 200;
  res.setHeader("Content-Type", doc.type);
  if (v.encoding) res.setHeader("Content-Encoding", v.encoding);
  res.setHeader("Content-Length", String(v.body.length));
  if (req.method === "HEAD") res.end();
  else res.end(v.body);
}
