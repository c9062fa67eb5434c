import type { Migration } from "kysely";
import * as m0001 from "./0001_init";
import * as m0002 from "./0002_lifecycle";
import * as m0003 from "./0003_idempotency";
import * as m0004 from "./0004_list_order_indexes";
import * as m0005 from "./0005_publish_slot_usage";
import * as m0006 from "./0006_proposals";
import * as m0007 from "./0007_public_lookups";

export const migrations: Record<string, Migration> = {
  "0001_init": m0001,
  "0002_lifecycle": m0002,
  "0003_idempotency": m0003,
  "0004_list_order_indexes": m0004,
  "0005_publish_slot_usage": m0005,
  "0006_proposals": m0006,
  "0007_public_lookups": m0007,
};
