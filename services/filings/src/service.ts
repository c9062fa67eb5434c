/** The filings service on the kit's service template: its store, the portal port and its rpc handlers. */
import { defineService, type ServiceRuntime } from "@dpp/kit";
import { filingsV1, passportV1 } from "@dpp/proto";
import { migrations } from "../migrations";
import { filingsEnv } from "./config";
import { httpPortal } from "./portal/http";
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
    const config = rt.config;
    const passport = rt.client(passportV1.PassportService, {
      address: config.PASSPORT_ADDR,
      audience: "passport",
    });
    const portal = config.PORTAL_BASE_URL
      ? httpPortal({
          baseUrl: config.PORTAL_BASE_URL,
          apiKey: config.PORTAL_API_KEY,
          timeoutMs: config.PORTAL_TIMEOUT_MS,
        })
      : undefined;
    const app = { store, passport, portal, onCommitted: rt.eventsCommitted };
    rt.serve(filingsV1.FilingsService, filingsRpc(app));
    return { store, app };
  },
});
