/** The imports service on the kit's service template: its store and its rpc handlers. */
import { defineService, type ServiceRuntime } from "@dpp/kit";
import { importsV1 } from "@dpp/proto";
import { migrations } from "../migrations";
import { importsEnv } from "./config";
import { importsRpc } from "./rpc/imports.rpc";
import { ImportsStore } from "./store/store";
import { IMPORTS_SCHEMA, type ImportsDB } from "./store/schema";

export const importsService = defineService({
  name: "imports",
  schema: IMPORTS_SCHEMA,
  migrations,
  env: importsEnv,
  grpcPort: 50055,
  outbox: true,
  idempotency: true,
  start: (rt: ServiceRuntime<typeof importsEnv, ImportsDB>) => {
    const store = new ImportsStore(rt.db);
    rt.serve(
      importsV1.ImportsService,
      importsRpc(store, { labelMaxLength: rt.config.IMPORTS_LABEL_MAX_LENGTH }),
    );
    return { store };
  },
});
