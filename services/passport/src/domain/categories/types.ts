/** Who may read a field (ESPR Art. 9(2)(c) / Battery Regulation Annex XIII). Not an ordered hierarchy. */
export type AccessTier = "public" | "restricted" | "authority";
export const ACCESS_TIERS: readonly AccessTier[] = ["public", "restricted", "authority"];

/** One node of a JSON Schema 2020-12 document, with the platform's x-* annotations on field nodes. */
export interface FieldSchema {
  type?: string;
  title?: string;
  description?: string;
  /** The unit a numeric quantity is expressed in ("%", "kg", "Ah" ...). On every numeric node. */
  "x-unit"?: string;
  /** The field must hold a non-empty value (or its companion document) before the passport can be published. */
  "x-required-for-publish"?: boolean;
  /** Who may read the field. */
  "x-access-tier"?: AccessTier;
  /** The field carries environmental information (used to detect environmental claims on publish). */
  "x-environmental"?: boolean;
  /** The field can carry an attached file; names the companion `data` key holding the document id. */
  "x-document-id-key"?: string;
  [keyword: string]: unknown;
}

/** The JSON Schema 2020-12 document describing a category's passport `data` object. */
export interface CategorySchema {
  $schema: string;
  $id: string;
  title: string;
  description: string;
  type: "object";
  additionalProperties: false;
  properties: Record<string, FieldSchema>;
}

export interface CategoryDefinition {
  /** Stable category id, e.g. "textile". Fixed on a passport at creation. */
  id: string;
  displayName: string;
  description: string;
  /** Date-shaped version of the field schema, e.g. "2026-08-01"; also the last segment of `schema.$id`. */
  schemaVersion: string;
  /** Legal acts the fields are grounded in. */
  regulations: string[];
  schema: CategorySchema;
}
