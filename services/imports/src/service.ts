/** The imports service on the kit's service template: its store, its rpc handlers and the background worker. */
import { sql } from "kysely";
import { defineService, type ServiceRuntime } from "@dpp/kit";
import { importsV1, passportV1 } from "@dpp/proto";
import { migrations } from "../migrations";
import { startWorker, type Worker } from "./app/worker";
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
    const { config } = rt;
    const store = new ImportsStore(rt.db);
    const passport = rt.client(passportV1.PassportService, {
      address: config.PASSPORT_ADDR,
      audience: "passport",
    });
    let worker: Worker | undefined;
    if (config.IMPORTS_WORKER === "on") {
      worker = startWorker({
        store,
        passport,
        log: rt.log,
        concurrency: config.IMPORTS_WORKER_CONCURRENCY,
        batchRows: config.IMPORTS_BATCH_ROWS,
        leaseMs: config.IMPORTS_LEASE_MS,
        pollMs: config.IMPORTS_POLL_MS,
        maxAttempts: config.IMPORTS_MAX_ATTEMPTS,
        onCommitted: rt.eventsCommitted,
      });
      const w = worker;
      // Stopped first on SIGTERM (the kit's drain): no import is claimed anew; the rows in hand finish.
      rt.onDrain(() => w.stop());
    }
    // The rows still to create (of every job queued or running), and how long the oldest one's job has waited.
    rt.metrics.queue("import_rows", async () => {
      const { rows } = await sql<{ backlog: number; age: number | null }>`
        select count(*)::int as backlog, extract(epoch from now() - min(j.created_at))::float8 as age
        from job_row r join job j on j.id = r.job_id where r.status = 'pending'`.execute(rt.db);
      return { backlog: rows[0]?.backlog ?? 0, oldestAgeSeconds: rows[0]?.age ?? 0 };
    });
    rt.serve(importsV1.ImportsService, importsRpc(store, { queued: () => worker?.wake() }));
    return { store, worker };
  },
});
