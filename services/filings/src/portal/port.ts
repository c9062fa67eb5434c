/**
 * The affichage portal as the filings service sees it: one port, spoken over HTTP to the real portal or to the
 * portal simulator (simulator.ts), which answers the same API. The shapes follow the portal's public API
 * (POST /produits, GET /produits/{gtin}, GET /organisation): only 201 and 208 are successes.
 */

/** The declaration of one reference (a passport), in the portal's vocabulary. */
export interface Declaration {
  /** GTIN-8 or GTIN-13 only. */
  gtins: string[];
  /** The platform's passport id. */
  internalReference: string;
  brandId: string;
  /** Mass in grams. */
  mass: number;
  materials: { id: string; share: number }[];
  /** ISO country code where the garment was made up, or null when unknown. */
  countryMaking: string | null;
}

/** What the portal holds for a GTIN (GET /produits/{gtin}). */
export interface DeclaredProduct {
  gtin: string;
  internalReference: string;
  brandId: string;
  score: number;
  standardized: number;
  durability: number;
  upload: { version: string; createdAt: string };
  declaration: Omit<Declaration, "gtins"> & { gtins: string[] };
}

export type DeclareOutcome =
  /** 201: recorded. */
  | { kind: "created" }
  /** 208: the same declaration exists; nothing changed. */
  | { kind: "already_declared" }
  /** 403: the organisation may not declare for this brand. */
  | { kind: "forbidden"; message: string };

/** The portal did not answer in time, answered 5xx, or could not be reached: the outcome is unknown. */
export class PortalUnavailable extends Error {
  constructor(
    readonly reason: "timeout" | "unreachable" | "server_error" | "unexpected_answer",
    message: string,
  ) {
    super(message);
    this.name = "PortalUnavailable";
  }
}

export interface PortalPort {
  /** The brands that delegated filing to the platform (GET /organisation, `authorizedBy`). */
  authorizedBrands(signal: AbortSignal): Promise<string[]>;
  /** POST /produits. `requestId` travels as the request's X-Request-Id for the portal's logs. */
  declare(d: Declaration, requestId: string, signal: AbortSignal): Promise<DeclareOutcome>;
  /** GET /produits/{gtin}: undefined when nothing is declared for the GTIN. */
  product(gtin: string, signal: AbortSignal): Promise<DeclaredProduct | undefined>;
  /** The URL of the official label of a GTIN's score. */
  labelUrl(gtin: string): string;
}
