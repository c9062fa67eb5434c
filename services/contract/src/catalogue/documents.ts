/** The documents service's events: a document created, its file ready, linked to and detached from a passport. */
import { catalogueEntry } from "./entry";

export interface DocumentRelated {
  object: "document";
  id: string;
  name: string;
  type: string;
  access_tier: string;
  upload_state: string;
  /** The passport the change concerns (null when none). */
  passport_id: string | null;
}

const FIELDS = ["object", "id", "name", "type", "access_tier", "upload_state", "passport_id"] as const;

export const EVENTS = {
  "document.created": catalogueEntry<DocumentRelated>(
    "A document was created with its upload (upload_state pending), attached to a passport.",
    FIELDS,
  ),
  "document.uploaded": catalogueEntry<DocumentRelated>(
    "A document's file was confirmed in storage and its bytes match its type: upload_state is ready.",
    FIELDS,
  ),
  "document.linked": catalogueEntry<DocumentRelated>(
    "A library document was attached to a passport.",
    FIELDS,
  ),
  "document.unlinked": catalogueEntry<DocumentRelated>("A document was detached from a passport.", FIELDS),
};
