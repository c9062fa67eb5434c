import { z } from "zod";
import { address, positiveInt } from "@dpp/kit";

const baseUrl = (fallback: string) =>
  z
    .string()
    .url()
    .default(fallback)
    .transform((v) => v.replace(/\/+$/, ""));

/** The variants-units service's own variables (the common ones come from the kit's service template). */
export const variantsUnitsEnv = {
  /** The passport service: the passports read, and the owner of GTIN claims. */
  PASSPORT_ADDR: address.default("127.0.0.1:50051"),
  /**
   * The documents service: a reading that cites a document registers its dependency there. Unset: no document can
   * support a reading (unit_reading_document_unavailable); the stack and the chart set it.
   */
  DOCUMENTS_ADDR: z.string().default(""),
  /** Where a person reviews a passport's variants: <REVIEW_BASE_URL>/organizations/<org>/passports/<id>/variants/review. */
  REVIEW_BASE_URL: baseUrl("https://app.dpp.example"),
  /** GTINs removed per batch of POST variants/remove (each batch commits and releases its claims by itself). */
  VARIANTS_REMOVAL_BATCH: positiveInt(250),
  /**
   * Fault injection for the tests of a removal whose later batch fails: the batch with this number (1-based) fails
   * after the ones before it committed. 0 (the default, and the only value outside tests): none.
   */
  VARIANTS_REMOVAL_FAIL_BATCH: z.coerce.number().int().min(0).default(0),
  /** How often the reconciler of GTIN claims and variant rows runs, and how old an unmatched row must be. */
  VARIANTS_RECONCILE_INTERVAL_MS: positiveInt(60_000),
  VARIANTS_RECONCILE_GRACE_MS: positiveInt(120_000),
};
