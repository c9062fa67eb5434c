/** The variants-units service on the kit's service template: its store, its passport client and its rpc handlers. */
import { defineService, type ServiceRuntime } from "@dpp/kit";
import { documentsV1, passportV1, variantsUnitsV1 } from "@dpp/proto";
import { migrations } from "../migrations";
import type { VariantsUnitsApp } from "./app/deps";
import { variantClaimsReconciler } from "./app/reconcile";
import { variantsUnitsEnv } from "./config";
import { preflight, variantsUnitsRpc } from "./rpc/variants-units.rpc";
import { VariantsUnitsStore } from "./store/store";
import { VARIANTS_UNITS_SCHEMA, type VariantsUnitsDB } from "./store/schema";

export const variantsUnitsService = defineService({
  name: "variants-units",
  schema: VARIANTS_UNITS_SCHEMA,
  migrations,
  env: variantsUnitsEnv,
  grpcPort: 50053,
  outbox: true,
  idempotency: true,
  start: (rt: ServiceRuntime<typeof variantsUnitsEnv, VariantsUnitsDB>) => {
    const store = new VariantsUnitsStore(rt.db);
    const config = rt.config;
    const passport = rt.client(passportV1.PassportService, {
      address: config.PASSPORT_ADDR,
      audience: "passport",
    });
    const app: VariantsUnitsApp = {
      store,
      passport,
      documents: config.DOCUMENTS_ADDR
        ? rt.client(documentsV1.DocumentsService, { address: config.DOCUMENTS_ADDR, audience: "documents" })
        : undefined,
      reviewBaseUrl: config.REVIEW_BASE_URL,
      removalBatch: config.VARIANTS_REMOVAL_BATCH,
      failRemovalBatch: config.VARIANTS_REMOVAL_FAIL_BATCH,
      onCommitted: rt.eventsCommitted,
    };
    rt.serve(variantsUnitsV1.VariantsUnitsService, variantsUnitsRpc(app), { preflight });
    const reconcile = rt.job({
      name: "variants-units:claims-reconciler",
      intervalMs: config.VARIANTS_RECONCILE_INTERVAL_MS,
      run: variantClaimsReconciler({
        store,
        passport,
        graceMs: config.VARIANTS_RECONCILE_GRACE_MS,
        log: rt.log,
      }),
      report: "variant rows whose GTIN claim cannot be made again",
    });
    return { store, app, reconcile };
  },
});
