import { z } from "zod";
import { address, positiveInt } from "@dpp/kit";

/** An absolute http(s) URL without query or fragment, kept without its trailing slashes. */
const baseUrl = (def: string) =>
  z
    .string()
    .default(def)
    .refine((v) => {
      try {
        const u = new URL(v);
        return (u.protocol === "https:" || u.protocol === "http:") && !u.search && !u.hash;
      } catch {
        return false;
      }
    }, "expected an absolute http(s) URL without query or fragment")
    .transform((v) => v.replace(/\/+$/, ""));

/** The public surface's own variables (the common ones come from the kit's service template). */
export const publicSurfaceEnv = {
  /** The owners it reads from, as a caller signing its own calls. */
  PASSPORT_ADDR: address.default("127.0.0.1:50051"),
  DOCUMENTS_ADDR: address.default("127.0.0.1:50054"),
  VARIANTS_UNITS_ADDR: address.default("127.0.0.1:50053"),
  /** Host of the public passport pages (public_url = <PUBLIC_BASE_URL>/p/<id>); the same value as passport's. */
  PUBLIC_BASE_URL: baseUrl("https://passports.dpp.example"),
  /** Host of the GS1 Digital Link resolver (<RESOLVER_BASE_URL>/01/<gtin14>); the same value as passport's. */
  RESOLVER_BASE_URL: baseUrl("https://id.dpp.example"),
  /** The HTTP listener that answers both hosts (the pages under /p/, the resolver under /01/ and /.well-known/). */
  PUBLIC_SURFACE_HTTP_HOST: z.string().min(1).default("127.0.0.1"),
  PUBLIC_SURFACE_HTTP_PORT: z.coerce.number().int().min(0).max(65_535).default(8081),
  /**
   * How long a public answer (a passport found, or not found) is kept in memory before its owners are asked
   * again: the longest an unpublish or a change takes to show (docs/decisions/0059-public-surface.md).
   */
  PUBLIC_CACHE_TTL_MS: positiveInt(5_000),
  /** Most passports (and misses) kept in memory; the oldest entry goes first. */
  PUBLIC_CACHE_MAX_ENTRIES: positiveInt(20_000),
  /** Cache-Control max-age of public answers, in seconds (shared caches and browsers). */
  PUBLIC_MAX_AGE_SECONDS: z.coerce.number().int().min(0).default(5),
  /** Requests per minute per client address, per replica (429 with Retry-After past it). */
  PUBLIC_RATE_LIMIT_PER_MINUTE: positiveInt(600),
  /** Proxies in front of the listener whose X-Forwarded-For is believed (0: the socket's address). */
  TRUST_PROXY: z.coerce.number().int().min(0).default(0),
  /** Checks the token of preview_url (passport signs it with the same secret); empty: every preview is 403. */
  PREVIEW_SIGNING_SECRET: z.string().default(""),
  /** What /.well-known/gs1resolver says of the resolver. */
  RESOLVER_NAME: z.string().min(1).default("DPP platform GS1 Digital Link resolver"),
  RESOLVER_CONTACT: z.string().default(""),
};
