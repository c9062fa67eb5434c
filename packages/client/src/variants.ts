/**
 * A passport's variants: `dpp.organization(id).variants.create(passportId, [...])`, `.list(passportId)` (an async
 * iterator), `.remove(passportId, gtins)`, `.delete(passportId, variantId)` and `.review(passportId)`. Writes take
 * an Idempotency-Key (a fresh one unless given).
 */
import {
  Core,
  readSettings,
  writeSettings,
  type RequestOptions,
  type WithResponse,
  type WriteOptions,
} from "./core";
import type { components } from "./openapi.generated";
import type { ListIterator } from "./pagination";

export type Variant = components["schemas"]["Variant"];
export type NewVariant = components["schemas"]["NewVariant"];
/** A page of variants: the generated `List & { data: Variant[] }` with `data` typed as the items alone. */
export type VariantList = Omit<components["schemas"]["VariantList"], "data"> & { data: Variant[] };
export type VariantRemoval = components["schemas"]["VariantRemoval"];
export type VariantReview = components["schemas"]["VariantReview"];
export type DeletedVariant = components["schemas"]["DeletedVariant"];

export interface ListVariantsParams {
  /** Only the variant with this GTIN (8, 12, 13 or 14 digits). */
  gtin?: string;
  limit?: number;
  cursor?: string;
}

/** The variants of one organization's passports, in the key's mode. */
export class Variants {
  constructor(
    private readonly core: Core,
    private readonly organization: string,
  ) {}

  private path(id: string) {
    return { path: { organization: this.organization, id } };
  }

  /** Adds 1 to 1000 variants, all or none; the answer lists them in request order. */
  async create(
    passportId: string,
    variants: NewVariant[],
    options: WriteOptions = {},
  ): Promise<WithResponse<VariantList>> {
    return this.core.send(writeSettings(options), (fetch) =>
      this.core.api.POST("/organizations/{organization}/passports/{id}/variants", {
        params: this.path(passportId),
        body: { variants },
        fetch,
      }),
    );
  }

  /** The passport's variants in the order they were added, page after page. */
  list(
    passportId: string,
    params: ListVariantsParams = {},
    options: RequestOptions = {},
  ): ListIterator<Variant> {
    const { cursor: start, ...filters } = params;
    return this.core.list(
      (cursor) =>
        this.core.send(readSettings(options), (fetch) =>
          this.core.api.GET("/organizations/{organization}/passports/{id}/variants", {
            params: { ...this.path(passportId), query: { ...filters, ...(cursor ? { cursor } : {}) } },
            fetch,
          }),
        ),
      start,
    );
  }

  /** Removes the variants holding these GTINs: `{removed, absent}`. */
  async remove(
    passportId: string,
    gtins: string[],
    options: WriteOptions = {},
  ): Promise<WithResponse<VariantRemoval>> {
    return this.core.send(writeSettings(options), (fetch) =>
      this.core.api.POST("/organizations/{organization}/passports/{id}/variants/remove", {
        params: this.path(passportId),
        body: { gtins },
        fetch,
      }),
    );
  }

  /** Deletes one variant. */
  async delete(
    passportId: string,
    variantId: string,
    options: WriteOptions = {},
  ): Promise<WithResponse<DeletedVariant>> {
    return this.core.send(writeSettings(options), (fetch) =>
      this.core.api.DELETE("/organizations/{organization}/passports/{id}/variants/{variantId}", {
        params: { path: { organization: this.organization, id: passportId, variantId } },
        fetch,
      }),
    );
  }

  /** The rows a person reviews and their fingerprint (send it as `variant_review_fingerprint` to publish). */
  async review(passportId: string, options: RequestOptions = {}): Promise<WithResponse<VariantReview>> {
    return this.core.send(readSettings(options), (fetch) =>
      this.core.api.GET("/organizations/{organization}/passports/{id}/variants/review", {
        params: this.path(passportId),
        fetch,
      }),
    );
  }
}
