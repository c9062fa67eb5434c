import type { Migration } from "kysely";
import * as m0001 from "./0001_init";
import * as m0002 from "./0002_variant_reconcile_idx";
import * as m0003 from "./0003_variant_write_indexes";
import * as m0004 from "./0004_variant_keys_by_passport";

export const migrations: Record<string, Migration> = {
  "0001_init": m0001,
  "0002_variant_reconcile_idx": m0002,
  "0003_variant_write_indexes": m0003,
  "0004_variant_keys_by_passport": m0004,
};
