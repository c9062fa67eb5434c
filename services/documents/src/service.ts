/**
 * The documents service on the kit's service template: its store, the storage adapter (filesystem with its own
 * HTTP listener for the signed URLs, or S3), the passport client, the sweep (a leader job) and its rpc handlers.
 */
import { randomBytes } from "node:crypto";
import { defineService, type ServiceRuntime } from "@dpp/kit";
import { documentsV1, passportV1, variantsUnitsV1 } from "@dpp/proto";
import { migrations } from "../migrations";
import { dependencyReconciler } from "./app/dependency-reconciler";
import { confirm, sweep, type DocumentsApp } from "./app/documents";
import { documentsEnv } from "./config";
import { startFilesServer } from "./http/files-server";
import { documentsRpc } from "./rpc/documents.rpc";
import { FilesystemStore } from "./storage/filesystem";
import type { StoragePort } from "./storage/port";
import { s3Store } from "./storage/s3";
import { DocumentsStore, tenantOfKey } from "./store/store";
import { DOCUMENTS_SCHEMA, type DocumentsDB } from "./store/schema";

export const documentsService = defineService({
  name: "documents",
  schema: DOCUMENTS_SCHEMA,
  migrations,
  env: documentsEnv,
  grpcPort: 50054,
  outbox: true,
  idempotency: true,
  refine: (c, ctx) => {
    if (c.DOCUMENTS_STORAGE === "s3" && !c.S3_BUCKET)
      ctx.addIssue({ code: "custom", path: ["S3_BUCKET"], message: "DOCUMENTS_STORAGE=s3 needs S3_BUCKET" });
  },
  start: async (rt: ServiceRuntime<typeof documentsEnv, DocumentsDB>) => {
    const config = rt.config;
    const store = new DocumentsStore(rt.db);
    const passport = rt.client(passportV1.PassportService, {
      address: config.PASSPORT_ADDR,
      audience: "passport",
    });
    let storage: StoragePort;
    let filesUrl: string | undefined;
    const app: DocumentsApp = {
      store,
      storage: undefined as unknown as StoragePort,
      passport,
      uploadTtlSeconds: config.DOCUMENTS_UPLOAD_TTL_SECONDS,
      readTtlSeconds: config.DOCUMENTS_READ_TTL_SECONDS,
      onCommitted: rt.eventsCommitted,
    };
    if (config.DOCUMENTS_STORAGE === "s3") {
      storage = s3Store({
        bucket: config.S3_BUCKET,
        region: config.S3_REGION,
        endpoint: config.S3_ENDPOINT || undefined,
        forcePathStyle: config.S3_FORCE_PATH_STYLE,
        accessKeyId: config.S3_ACCESS_KEY_ID || undefined,
        secretAccessKey: config.S3_SECRET_ACCESS_KEY || undefined,
      });
    } else {
      const secret = config.DOCUMENTS_URL_SECRET || randomBytes(32).toString("base64url");
      const fsStore = new FilesystemStore({
        root: config.DOCUMENTS_STORAGE_DIR,
        secret,
        baseUrl: () => config.DOCUMENTS_PUBLIC_URL || filesUrl!,
      });
      await fsStore.ensureRoot();
      storage = fsStore;
      const outcome = async (key: string, confirmIt: boolean) => {
        const t = tenantOfKey(key);
        let d = t && (await store.find(t, t.documentId));
        if (!d) return { found: false };
        if (confirmIt) d = await confirm(app, d);
        return {
          found: true,
          uploadState: d.upload_state,
          problem: d.problem_code ? { code: d.problem_code, message: d.problem_message ?? "" } : null,
        };
      };
      const files = await startFilesServer({
        host: config.DOCUMENTS_HTTP_HOST,
        port: config.DOCUMENTS_HTTP_PORT,
        secret,
        store: fsStore,
        log: rt.log,
        beforeUpload: (key) => outcome(key, false),
        onStored: (key) => outcome(key, true),
      });
      filesUrl = files.url;
      rt.onStop(() => files.close());
      rt.log.info({ url: config.DOCUMENTS_PUBLIC_URL || files.url }, "documents file listener ready");
    }
    app.storage = storage;
    const sweeper = rt.job({
      name: "documents:sweep",
      intervalMs: config.DOCUMENTS_SWEEP_INTERVAL_MS,
      run: () => sweep(app, { graceSeconds: config.DOCUMENTS_PENDING_GRACE_SECONDS, batch: 100 }),
      report: "pending documents confirmed or removed",
    });
    const dependencyReconcile =
      config.VARIANTS_UNITS_ADDR !== "" &&
      rt.job({
        name: "documents:dependency-reconciler",
        intervalMs: config.DEPENDENCY_RECONCILE_INTERVAL_MS,
        run: dependencyReconciler({
          store,
          variantsUnits: rt.client(variantsUnitsV1.VariantsUnitsService, {
            address: config.VARIANTS_UNITS_ADDR,
            audience: "variants-units",
          }),
          graceMs: config.DEPENDENCY_RECONCILE_GRACE_MS,
        }),
        report: "reading dependencies without their reading deleted",
      });
    rt.serve(documentsV1.DocumentsService, documentsRpc(app));
    return { store, app, sweeper, dependencyReconcile: dependencyReconcile || undefined };
  },
});
