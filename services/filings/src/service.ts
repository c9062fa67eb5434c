/** The filings service on the kit's service template: its store and its rpc handlers. */
import { defineService, type ServiceRuntime } from "@dpp/kit";
import { filingsV1 } from "@dpp/proto";
import { migrations } from "../migrations";
import { filingsEnv } from "./config";
import { filingsRpc } from "./rpc/filings.rpc";
import { FilingsStore } from "./store/store";
import { FILINGS_SCHEMA, type FilingsDB } from "./store/schema";

export const filingsService = defineService({
  name: "filings",
  schema: FILINGS_SCHEMA,
  migrations,
  env: filingsEnv,
  grpcPort: 50056,
  outbox: true,
  idempotency: true,
  start: (rt: ServiceRuntime<typeof filingsEnv, FilingsDB>) => {
    const store = new FilingsStore(rt.db);
    rt.serve(
      filingsV1.FilingsService,
      filingsRpc(store, { labelMaxLength: rt.config.FILINGS_LABEL_MAX_LENGTH }),
    );
    return { store };
  },
});
