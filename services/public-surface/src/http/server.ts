/**
 * The public surface's HTTP listener: no API key, no cookie, GET, HEAD and OPTIONS only.
 *
 *   /01/<gtin>[/10/<batch>][/21/<serial>]   the GS1 Digital Link resolver (RESOLVER_BASE_URL)
 *   /.well-known/gs1resolver                 what the resolver is
 *   /p/<id>                                  the public passport page; JSON and JSON-LD by Accept
 *   /p/<id>/qr.svg, /p/<id>/qr.png?size=     QR codes of qr_target
 *   /p/<id>/documents/<document id>          a public document or photo (a redirect to its read URL)
 *
 * Every answer carries CORS headers; every resolver answer a Link header to its linkset; public answers an ETag
 * and Cache-Control. Requests are counted per client address (429 past the limit). Answers come from memory
 * (PublicViews) in the common case. Rules and why: docs/decisions/0059-public-surface.md.
 */
import { createHash } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { ApiError, httpStatusOf, verifyPreviewToken } from "@dpp/contract";
import { closeConnectionsWhileDraining, closeHttpServer, type Logger, type ServiceMetrics } from "@dpp/kit";
import type { DocumentsClient, PublicViews } from "../app/views";
import { renderedOnce } from "../app/views";
import {
  canonicalUri,
  defaultLink,
  GS1_VOC,
  linkset,
  LINKSET_MEDIA_TYPE,
  linksetLinkHeader,
  linkTypeUri,
  MalformedLink,
  parseDigitalLink,
  redirectTarget,
} from "../domain/digital-link";
import { pickLanguage, type Lang } from "../domain/i18n";
import { renderBadRequest, renderNotFound, renderPage, renderPreviewRefused } from "../domain/page";
import { parseQrSize, qrPng, qrSvg } from "../domain/qr";
import { jsonLd, knowsSerial, passportLinks, productName, publicJson } from "../domain/representations";

export interface PublicServerOptions {
  host: string;
  port: number;
  views: PublicViews;
  documents: DocumentsClient;
  resolverBaseUrl: string;
  publicBaseUrl: string;
  maxAgeSeconds: number;
  ratePerMinute: number;
  trustProxy: number;
  resolverName: string;
  resolverContact: string;
  /** Checks preview_url's token (PREVIEW_SIGNING_SECRET, passport's too); empty: every preview is refused. */
  previewSecret: string;
  log: Logger;
  /** Whether to answer /readyz 200 (false from SIGTERM on: the kit's drain, rt.draining()). */
  ready?: () => boolean;
  /** Each answer counted and timed under its route's pattern (`routeOf`), each 429 under its limit. */
  metrics?: ServiceMetrics;
}

/**
 * The route pattern of a path, as the metrics name it: the listener's routes (see the header) with their
 * parameters as {names}, never the raw path; "unmatched" for any other path.
 */
export function routeOf(pathname: string): string {
  if (pathname === "/healthz" || pathname === "/readyz" || pathname === "/.well-known/gs1resolver")
    return pathname;
  if (pathname === "/01" || pathname.startsWith("/01/")) return "/01/{gtin}";
  const segments = pathname.split("/");
  if (segments[1] !== "p" || !segments[2]) return "unmatched";
  const rest = segments.slice(3).filter((x, i, all) => x !== "" || i < all.length - 1);
  if (rest.length === 0) return "/p/{id}";
  if (rest.length === 1 && (rest[0] === "qr.svg" || rest[0] === "qr.png")) return `/p/{id}/${rest[0]}`;
  if (rest.length === 2 && rest[0] === "documents") return "/p/{id}/documents/{document}";
  return "unmatched";
}

type Headers = Record<string, string>;

const CORS: Headers = {
  "Access-Control-Allow-Origin": "*",
  "Access-Control-Expose-Headers": "Link, Location, ETag, Content-Language, Retry-After",
};

interface Answer {
  status: number;
  headers: Headers;
  body?: string | Buffer;
}

/** A rendered body with its strong ETag. */
interface Rendered {
  body: string | Buffer;
  etag: string;
}

function rendered(body: string | Buffer): Rendered {
  return { body, etag: `"${createHash("sha1").update(body).digest("base64url").slice(0, 22)}"` };
}

/** Fixed one-minute windows per client address, in this process. */
export class AddressLimiter {
  private window = -1;
  private readonly counts = new Map<string, number>();
  constructor(private readonly perMinute: number) {}

  /** Seconds to wait, or 0 when the request may go on. */
  take(address: string, now = Date.now()): number {
    const w = Math.floor(now / 60_000);
    if (w !== this.window) {
      this.window = w;
      this.counts.clear();
    }
    const n = (this.counts.get(address) ?? 0) + 1;
    this.counts.set(address, n);
    return n <= this.perMinute ? 0 : Math.max(1, Math.ceil(((w + 1) * 60_000 - now) / 1000));
  }
}

/** The client's address: the socket's, or the one `trustProxy` hops back in X-Forwarded-For. */
export function clientAddress(req: http.IncomingMessage, trustProxy: number): string {
  const socket = req.socket.remoteAddress ?? "unknown";
  if (trustProxy <= 0) return socket;
  const forwarded = String(req.headers["x-forwarded-for"] ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  const chain = [...forwarded, socket];
  return chain[Math.max(0, chain.length - 1 - trustProxy)] ?? socket;
}

/** Which of `offered` the Accept header prefers (q-values, then the order offered); the first when no Accept. */
export function negotiate(accept: string | undefined, offered: readonly string[]): string | null {
  if (!accept) return offered[0]!;
  let best: string | null = null;
  let bestQ = 0;
  let bestSpecific = -1;
  for (const part of accept.split(",")) {
    const [range, ...params] = part.trim().toLowerCase().split(";");
    const qParam = params.find((p) => p.trim().startsWith("q="));
    const q = qParam ? Number(qParam.trim().slice(2)) : 1;
    if (!(q > 0)) continue;
    for (const type of offered) {
      const specific =
        range === type ? 2 : range === `${type.split("/")[0]}/*` ? 1 : range === "*/*" ? 0 : -1;
      if (specific < 0) continue;
      if (q > bestQ || (q === bestQ && specific > bestSpecific)) {
        best = type;
        bestQ = q;
        bestSpecific = specific;
      }
    }
  }
  return best;
}

function wantsHtml(req: http.IncomingMessage): boolean {
  return negotiate(req.headers.accept, ["text/html", "application/json"]) === "text/html";
}

function errorJson(code: string, message: string, extra: Record<string, unknown> = {}): string {
  return JSON.stringify({ error: { code, message, ...extra } });
}

export async function startPublicServer(
  o: PublicServerOptions,
): Promise<{ url: string; close(graceMs?: number): Promise<void> }> {
  const limiter = new AddressLimiter(o.ratePerMinute);
  const cacheControl = `public, max-age=${o.maxAgeSeconds}`;

  const notFound = (req: http.IncomingMessage, lang: Lang, extra: Headers = {}, detail?: string): Answer =>
    wantsHtml(req)
      ? {
          status: 404,
          headers: { "Content-Type": "text/html; charset=utf-8", "Cache-Control": cacheControl, ...extra },
          body: renderNotFound(lang, detail),
        }
      : {
          status: 404,
          headers: {
            "Content-Type": "application/json; charset=utf-8",
            "Cache-Control": cacheControl,
            ...extra,
          },
          body: errorJson("resource_not_found", detail ?? "No published passport answers at this address."),
        };

  const badRequest = (req: http.IncomingMessage, message: string, extra: Headers = {}): Answer =>
    wantsHtml(req)
      ? {
          status: 400,
          headers: { "Content-Type": "text/html; charset=utf-8", ...extra },
          body: renderBadRequest(message),
        }
      : {
          status: 400,
          headers: { "Content-Type": "application/json; charset=utf-8", ...extra },
          body: errorJson("invalid_request", message),
        };

  /** 200 with the rendered body, or 304 when the client holds it already. */
  const fresh = (req: http.IncomingMessage, r: Rendered, headers: Headers): Answer => {
    const all = { ETag: r.etag, "Cache-Control": cacheControl, ...headers };
    const inm = req.headers["if-none-match"];
    if (inm && inm.split(",").some((t) => t.trim() === r.etag || t.trim() === "*"))
      return { status: 304, headers: all };
    return { status: 200, headers: all, body: r.body };
  };

  async function resolver(req: http.IncomingMessage, url: URL): Promise<Answer> {
    const lang = pickLanguage(url.searchParams.get("lang"), req.headers["accept-language"]);
    let dl;
    try {
      dl = parseDigitalLink(url.pathname);
    } catch (err) {
      if (err instanceof MalformedLink) return badRequest(req, err.message);
      throw err;
    }
    const canonical = canonicalUri(o.resolverBaseUrl, dl);
    const link = { Link: linksetLinkHeader(canonical) };
    const entry = await o.views.byGtin(dl.gtin14);
    if (!entry.value) return notFound(req, lang, link);
    const { view, variantGtin14 } = entry.value;
    const links = passportLinks(view, { variantGtin14, serial: dl.serial });
    const linkType = url.searchParams.get("linkType");
    const asLinkset =
      linkType === "linkset" ||
      linkType === "all" ||
      (linkType === null &&
        negotiate(req.headers.accept, [LINKSET_MEDIA_TYPE]) !== null &&
        (req.headers.accept ?? "").includes(LINKSET_MEDIA_TYPE));
    if (asLinkset) {
      const r = renderedOnce(entry, `linkset:${canonical}`, () => {
        const variant = view.variants.find((v) => v.gtin14 === variantGtin14);
        const parts = [productName(view)];
        if (variant) parts.push([variant.size, variant.colour].filter(Boolean).join(", "));
        if (dl.batch !== undefined) parts.push(`batch ${dl.batch}`);
        if (dl.serial !== undefined && knowsSerial(view, dl.serial)) parts.push(`serial number ${dl.serial}`);
        return rendered(JSON.stringify(linkset(canonical, parts.filter(Boolean).join(", "), links)));
      });
      return fresh(req, r, {
        "Content-Type": LINKSET_MEDIA_TYPE,
        Link: linksetLinkHeader(canonical, true),
        Vary: "Accept",
      });
    }
    let target;
    if (linkType !== null) {
      const targets = links[linkTypeUri(linkType)];
      if (!targets)
        return notFound(
          req,
          lang,
          link,
          `This item has no link of type ${linkType}; its linkset lists the ones it has.`,
        );
      target = targets[0]!;
    } else target = defaultLink(links);
    return {
      status: 307,
      headers: {
        Location: redirectTarget(target.href, url.searchParams),
        "Cache-Control": cacheControl,
        Vary: "Accept",
        ...link,
      },
    };
  }

  function wellKnown(req: http.IncomingMessage): Answer {
    const body = JSON.stringify({
      name: o.resolverName,
      resolverRoot: o.resolverBaseUrl,
      supportedPrimaryKeys: ["gtin"],
      supportedLinkType: [{ namespace: GS1_VOC, prefix: "gs1:", profile: `${GS1_VOC}?show=linktypes` }],
      linkTypeDefaultCanBeLinkset: false,
      supportedContextValuesEnumerated: [],
      contact: o.resolverContact || undefined,
    });
    return fresh(req, rendered(body), { "Content-Type": "application/json; charset=utf-8" });
  }

  /**
   * preview_url: what the page shows (or will show) of a draft, a test passport or an unpublished one, to whoever
   * holds the link passport signed for the organization's own people; never cached anywhere, never indexed.
   */
  async function preview(req: http.IncomingMessage, url: URL, id: string, rest: string[]): Promise<Answer> {
    const lang = pickLanguage(url.searchParams.get("lang"), req.headers["accept-language"]);
    const token = url.searchParams.get("token") ?? "";
    const grant = verifyPreviewToken(o.previewSecret, id, token, Date.now());
    const privately: Headers = {
      "Cache-Control": "private, no-store",
      "Referrer-Policy": "no-referrer",
      "X-Robots-Tag": "noindex",
    };
    if (!grant)
      return wantsHtml(req)
        ? {
            status: 403,
            headers: { "Content-Type": "text/html; charset=utf-8", ...privately },
            body: renderPreviewRefused(lang),
          }
        : {
            status: 403,
            headers: { "Content-Type": "application/json; charset=utf-8", ...privately },
            body: errorJson("insufficient_scope", "This preview link is not valid or has expired."),
          };
    const view = await o.views.preview(id, grant.organizationId, grant.livemode);
    if (!view) return notFound(req, lang, privately);
    if (rest.length === 0) {
      const query = new URLSearchParams({ token });
      const body = renderPage({
        view,
        lang,
        variantGtin14: null,
        path: `/p/${encodeURIComponent(view.id)}/preview`,
        query,
        previewToken: token,
      });
      return {
        status: 200,
        headers: { "Content-Type": "text/html; charset=utf-8", "Content-Language": lang, ...privately },
        body,
      };
    }
    if (rest.length === 2 && rest[0] === "documents") {
      const d = view.documents.find((x) => x.id === rest[1]);
      if (!d) return notFound(req, lang, privately);
      const res = await o.documents.getDownload(
        { documentId: d.id },
        {
          context: {
            requestId: `preview_${Date.now().toString(36)}`,
            organizationId: grant.organizationId,
            livemode: grant.livemode,
          },
        },
      );
      return { status: 302, headers: { Location: res.url, ...privately } };
    }
    return notFound(req, lang, privately);
  }

  async function page(req: http.IncomingMessage, url: URL, id: string, rest: string[]): Promise<Answer> {
    if (rest[0] === "preview") return preview(req, url, id, rest.slice(1));
    const lang = pickLanguage(url.searchParams.get("lang"), req.headers["accept-language"]);
    const entry = await o.views.byId(id);
    if (!entry.value) return notFound(req, lang);
    const { view } = entry.value;
    const linkHeader: Headers = view.digitalLink
      ? { Link: `<${view.digitalLink}?linkType=linkset>; rel="linkset"; type="${LINKSET_MEDIA_TYPE}"` }
      : {};
    if (rest.length === 0) {
      const format = negotiate(req.headers.accept, ["text/html", "application/ld+json", "application/json"]);
      const variantParam = url.searchParams.get("variant");
      const variant = view.variants.some((v) => v.gtin14 === variantParam) ? variantParam : null;
      if (format === "application/json" || format === "application/ld+json") {
        const r = renderedOnce(entry, format, () =>
          rendered(JSON.stringify(format === "application/json" ? publicJson(view) : jsonLd(view))),
        );
        return fresh(req, r, { "Content-Type": `${format}; charset=utf-8`, Vary: "Accept", ...linkHeader });
      }
      const query = new URLSearchParams();
      if (variant) query.set("variant", variant);
      const r = renderedOnce(entry, `html:${lang}:${variant ?? ""}`, () =>
        rendered(
          renderPage({
            view,
            lang,
            variantGtin14: variant,
            path: `/p/${encodeURIComponent(view.id)}`,
            query,
          }),
        ),
      );
      return fresh(req, r, {
        "Content-Type": "text/html; charset=utf-8",
        "Content-Language": lang,
        Vary: "Accept, Accept-Language",
        ...linkHeader,
      });
    }
    if (rest.length === 1 && (rest[0] === "qr.svg" || rest[0] === "qr.png")) {
      const size = parseQrSize(url.searchParams.get("size"));
      if (size === null) return badRequest(req, "size must be a whole number of pixels from 64 to 2048.");
      const svg = rest[0] === "qr.svg";
      const r = await renderedOnce(entry, `${rest[0]}:${size}`, async () =>
        rendered(svg ? await qrSvg(view.qrTarget, size) : await qrPng(view.qrTarget, size)),
      );
      return fresh(req, r, {
        "Content-Type": svg ? "image/svg+xml" : "image/png",
        "Content-Disposition": `inline; filename="passport-${view.id}.${svg ? "svg" : "png"}"`,
      });
    }
    if (rest.length === 2 && rest[0] === "documents") {
      const d = view.documents.find((x) => x.id === rest[1]);
      if (!d) return notFound(req, lang);
      const res = await o.documents.getPublicDownload(
        { organizationId: view.organizationId, documentId: d.id },
        { context: { requestId: `public_${Date.now().toString(36)}` } },
      );
      return { status: 302, headers: { Location: res.url, "Cache-Control": "no-store" } };
    }
    return notFound(req, lang);
  }

  async function route(req: http.IncomingMessage): Promise<Answer> {
    const url = new URL(req.url ?? "/", "http://public.invalid");
    if (url.pathname === "/healthz")
      return { status: 200, headers: { "Content-Type": "text/plain" }, body: "ok\n" };
    // Readiness: 503 once the process drains, so that the load balancer stops sending requests here.
    if (url.pathname === "/readyz")
      return (o.ready?.() ?? true)
        ? { status: 200, headers: { "Content-Type": "text/plain" }, body: "ready\n" }
        : { status: 503, headers: { "Content-Type": "text/plain" }, body: "draining\n" };
    if (req.method === "OPTIONS")
      return {
        status: 204,
        headers: {
          "Access-Control-Allow-Methods": "GET, HEAD, OPTIONS",
          "Access-Control-Allow-Headers": "Accept, Accept-Language, If-None-Match",
          "Access-Control-Max-Age": "86400",
          Allow: "GET, HEAD, OPTIONS",
        },
      };
    const wait = limiter.take(clientAddress(req, o.trustProxy));
    if (wait > 0) {
      o.metrics?.rateLimitRefusal("public-per-address");
      return {
        status: 429,
        headers: { "Content-Type": "application/json; charset=utf-8", "Retry-After": String(wait) },
        body: errorJson("rate_limited", `Too many requests from this address; retry in ${wait} s.`),
      };
    }
    if (req.method !== "GET" && req.method !== "HEAD")
      return {
        status: 405,
        headers: { "Content-Type": "application/json; charset=utf-8", Allow: "GET, HEAD, OPTIONS" },
        body: errorJson("method_not_allowed", "The public surface answers GET, HEAD and OPTIONS."),
      };
    if (url.pathname === "/.well-known/gs1resolver") return wellKnown(req);
    if (url.pathname.startsWith("/01/") || url.pathname === "/01") return resolver(req, url);
    const segments = url.pathname.split("/").slice(1);
    if (segments[0] === "p" && segments[1]) {
      let id: string;
      try {
        id = decodeURIComponent(segments[1]);
      } catch {
        return notFound(req, "en");
      }
      const rest = segments.slice(2).filter((s, i, all) => s !== "" || i < all.length - 1);
      return page(req, url, id, rest);
    }
    return notFound(req, pickLanguage(null, req.headers["accept-language"]));
  }

  const metrics = o.metrics;
  const server = http.createServer((req, res) => {
    const started = performance.now();
    if (metrics)
      res.once("finish", () => {
        const q = req.url?.indexOf("?") ?? -1;
        const path = q < 0 ? (req.url ?? "/") : req.url!.slice(0, q);
        metrics.httpAnswer(
          routeOf(path),
          req.method ?? "GET",
          res.statusCode,
          (performance.now() - started) / 1000,
        );
      });
    route(req)
      .catch((err: unknown): Answer => {
        o.log.error({ err, url: req.url }, "public answer failed");
        // An owner that refused or did not answer: its code when it is one of the table's, else internal_error.
        const code = err instanceof ApiError ? err.code : "internal_error";
        return {
          status: httpStatusOf(code),
          headers: { "Content-Type": "application/json; charset=utf-8", "Retry-After": "5" },
          body: errorJson(code, "The passport could not be read just now; retry shortly."),
        };
      })
      .then((a) => {
        const headers: Headers = { ...CORS, "X-Content-Type-Options": "nosniff", ...a.headers };
        if (a.body !== undefined) headers["Content-Length"] = String(Buffer.byteLength(a.body));
        res.writeHead(a.status, headers);
        res.end(req.method === "HEAD" ? undefined : a.body);
      });
  });
  server.keepAliveTimeout = 65_000;
  // Not ready: draining (SIGTERM), each answer closes its connection.
  const ready = o.ready;
  if (ready) closeConnectionsWhileDraining(server, () => !ready());
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(o.port, o.host, () => resolve());
  });
  const addr = server.address() as AddressInfo;
  const host = addr.family === "IPv6" ? `[${addr.address}]` : addr.address;
  return {
    url: `http://${host}:${addr.port}`,
    close: (graceMs = 0) => closeHttpServer(server, graceMs),
  };
}
