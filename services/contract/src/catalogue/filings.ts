/** The filings service's events (services/filings). */
import { catalogueEntry } from "./entry";

export interface AffichageRelated {
  object: "affichage";
  name: string;
  passport_id: string;
  status: string;
  portal_gtin: string | null;
}

export const EVENTS = {
  "affichage.filed": catalogueEntry<AffichageRelated>(
    "A French environmental display declaration was filed with the portal.",
    ["object", "name", "passport_id", "status", "portal_gtin"],
  ),
};
