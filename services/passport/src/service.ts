/**
 * The passport service on the kit's service template: the store, the use cases, the rpc handlers, and the
 * test-mode retention job. The rest (config, pool, bus, relay, gRPC server, trust check, shutdown) is the kit's.
 */
import { defineService, type ServiceRuntime } from "@dpp/kit";
import { documentsV1, passportV1, variantsUnitsV1 } from "@dpp/proto";
import { documentsPrePublishCheck } from "./app/document-checks";
import { variantsUnitsPrePublishCheck } from "./app/variants-units-checks";
import { migrations } from "../migrations";
import { passportEnv } from "./config";
import type { PassportDB } from "./store/schema";
import { PassportStore } from "./store";
import { passportUseCases } from "./app";
import { expireTestPassports } from "./app/retention";
import { gtinReconciler } from "./app/gtin-reconciler";
import { passportRpc } from "./rpc/passport.rpc";
import { defaultPrePublishChecks, type PrePublishCheck } from "./domain/prepublish";

export const PASSPORT_SCHEMA = "passport";

export interface PassportServiceOptions {
  /** Pre-publish checks owned by other services; defaults to "nothing to check" for each. */
  prePublishChecks?: PrePublishCheck;
}

export function passportService(options: PassportServiceOptions = {}) {
  return defineService({
    name: "passport",
    schema: PASSPORT_SCHEMA,
    migrations,
    env: passportEnv,
    grpcPort: 50051,
    outbox: true,
    idempotency: { openWithWork: true },
    start: (rt: ServiceRuntime<typeof passportEnv, PassportDB>) => {
      const { config } = rt;
      const store = new PassportStore(rt.db);
      const documents = config.DOCUMENTS_ADDR
        ? documentsPrePublishCheck(
            rt.client(documentsV1.DocumentsService, {
              address: config.DOCUMENTS_ADDR,
              audience: "documents",
            }),
          )
        : undefined;
      const variantsUnitsClient = config.VARIANTS_UNITS_ADDR
        ? rt.client(variantsUnitsV1.VariantsUnitsService, {
            address: config.VARIANTS_UNITS_ADDR,
            audience: "variants-units",
          })
        : undefined;
      const variantsUnits = variantsUnitsClient && variantsUnitsPrePublishCheck(variantsUnitsClient);
      const useCases = passportUseCases({
        store,
        db: rt.db,
        hosts: {
          publicBaseUrl: config.PUBLIC_BASE_URL,
          resolverBaseUrl: config.RESOLVER_BASE_URL,
          previewSecret: config.PREVIEW_SIGNING_SECRET,
        },
        reviewBaseUrl: config.REVIEW_BASE_URL,
        docsBaseUrl: config.DOCS_BASE_URL,
        checks: options.prePublishChecks ?? defaultPrePublishChecks(documents, variantsUnits),
        onCommitted: rt.eventsCommitted,
      });
      const retention = rt.job({
        name: "passport:test-retention",
        intervalMs: config.RETENTION_INTERVAL_MS,
        run: () => expireTestPassports(store, rt.eventsCommitted),
        report: "test passports past retention deleted",
      });
      const gtinReconcile =
        variantsUnitsClient &&
        rt.job({
          name: "passport:gtin-reconciler",
          intervalMs: config.GTIN_RECONCILE_INTERVAL_MS,
          run: gtinReconciler({
            store,
            variantsUnits: variantsUnitsClient,
            graceMs: config.GTIN_RECONCILE_GRACE_MS,
          }),
          report: "variant GTIN claims without their variant released",
        });
      rt.serve(passportV1.PassportService, passportRpc(useCases));
      return { retention, gtinReconcile };
    },
  });
}
