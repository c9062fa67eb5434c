import type { Migration } from "kysely";
import * as m0001 from "./0001_init";
import * as m0002 from "./0002_idempotency_grants_capabilities";
import * as m0003 from "./0003_outbox";
import * as m0004 from "./0004_idempotency_moves_to_services";
import * as m0005 from "./0005_identity_change_notifications";
import * as m0006 from "./0006_people";
import * as m0007 from "./0007_authority_tokens";

/** Static map: the same under tsx, jest and the bundled build. */
export const migrations: Record<string, Migration> = {
  "0001_init": m0001,
  "0002_idempotency_grants_capabilities": m0002,
  "0003_outbox": m0003,
  "0004_idempotency_moves_to_services": m0004,
  "0005_identity_change_notifications": m0005,
  "0006_people": m0006,
  "0007_authority_tokens": m0007,
};
