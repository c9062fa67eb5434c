/** The imports service's events (docs/decisions/0053-imports-jobs-rows-and-per-row-keys.md). */
import { catalogueEntry } from "./entry";

export interface ImportJobRelated {
  object: "import_job";
  id: string;
  name: string;
  status: string;
  total_rows: number;
  succeeded_rows: number;
  failed_rows: number;
}

const FIELDS = ["object", "id", "name", "status", "total_rows", "succeeded_rows", "failed_rows"] as const;

export const EVENTS = {
  "import.completed": catalogueEntry<ImportJobRelated>(
    "An import job finished: every row succeeded or failed (its passports' passport.created came before).",
    FIELDS,
  ),
};
