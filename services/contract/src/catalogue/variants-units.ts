/** The events of the variants-units service: variants of a passport, battery units, their status and readings. */
import { catalogueEntry } from "./entry";

export interface VariantRelated {
  object: "variant";
  id: string;
  name: string;
  passport_id: string;
  passport: string;
  gtin: string;
  size: string | null;
  colour: string | null;
}

export interface UnitRelated {
  object: "unit";
  id: string;
  name: string;
  passport_id: string;
  passport: string;
  unit_serial: string;
  status: string | null;
  previous_status: string | null;
}

export interface UnitReadingRelated {
  object: "unit_reading";
  id: string;
  unit_id: string;
  unit: string;
  passport_id: string;
  field: string;
  observed_on: string;
  source: string;
}

const VARIANT_FIELDS = ["object", "id", "name", "passport_id", "passport", "gtin", "size", "colour"] as const;
const UNIT_FIELDS = [
  "object",
  "id",
  "name",
  "passport_id",
  "passport",
  "unit_serial",
  "status",
  "previous_status",
] as const;
const READING_FIELDS = [
  "object",
  "id",
  "unit_id",
  "unit",
  "passport_id",
  "field",
  "observed_on",
  "source",
] as const;

export const EVENTS = {
  "variant.created": catalogueEntry<VariantRelated>(
    "A variant (size/colour with a GTIN) was added to a passport; one event per variant of the batch.",
    VARIANT_FIELDS,
  ),
  "variant.removed": catalogueEntry<VariantRelated>(
    "A variant was removed (DELETE, or POST variants/remove); one event per removed variant.",
    VARIANT_FIELDS,
  ),
  "unit.created": catalogueEntry<UnitRelated>(
    "A serialized battery unit was added (previous_status null).",
    UNIT_FIELDS,
  ),
  "unit.status_changed": catalogueEntry<UnitRelated>(
    "A unit's status changed; previous_status is the status it left.",
    UNIT_FIELDS,
  ),
  "unit.reading_recorded": catalogueEntry<UnitReadingRelated>(
    "A reading of one field of a unit was recorded.",
    READING_FIELDS,
  ),
};
