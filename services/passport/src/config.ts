import { z } from "zod";
import { positiveInt } from "@dpp/kit";

/** An absolute http(s) URL, kept without its trailing slashes. */
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

/** The passport service's own variables (the common ones come from the kit's service template). */
export const passportEnv = {
  /** Host of the public passport pages: public_url = <PUBLIC_BASE_URL>/p/<id>. */
  PUBLIC_BASE_URL: baseUrl("https://passports.dpp.example"),
  /** Host of the GS1 Digital Link resolver: <RESOLVER_BASE_URL>/01/<gtin14>[/21/<serial>]. */
  RESOLVER_BASE_URL: baseUrl("https://id.dpp.example"),
  /**
   * Signs the token of preview_url (HMAC-SHA256), the same value as the public surface's; empty: preview_url has
   * no token and the public surface answers it 403 (docs/decisions/0059-public-surface.md).
   */
  PREVIEW_SIGNING_SECRET: z.string().default(""),
  /** Where a person reviews a connector's publish request: <REVIEW_BASE_URL>/organizations/<org>/publish-approvals/<id>. */
  REVIEW_BASE_URL: baseUrl("https://app.dpp.example"),
  /** Base of warning documentation links (doc_url = <DOCS_BASE_URL>#<code>), as the gateway's for errors. */
  DOCS_BASE_URL: baseUrl("https://docs.dpp.example/errors"),
  /**
   * The documents service, asked at publish whether the passport's documents are attached and confirmed in
   * storage. Unset: no documents service runs, nothing to check (the stack and the chart set it).
   */
  DOCUMENTS_ADDR: z.string().default(""),
  /**
   * The variants-units service, asked at publish for the passport's unit count and variant review. Unset: no
   * variants-units service runs, nothing to check (the stack and the chart set it).
   */
  VARIANTS_UNITS_ADDR: z.string().default(""),
  /**
   * How often the reconciler of variant GTIN claims runs (with VARIANTS_UNITS_ADDR), and how old a claim must be
   * before it looks at it: a claim whose variant row does not exist past the grace is released.
   */
  GTIN_RECONCILE_INTERVAL_MS: positiveInt(60_000),
  GTIN_RECONCILE_GRACE_MS: positiveInt(120_000),
  /** How often the test-mode retention job runs. */
  RETENTION_INTERVAL_MS: positiveInt(3_600_000),
};
