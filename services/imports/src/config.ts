import { z } from "zod";
import { address, positiveInt } from "@dpp/kit";

/** The imports service's own variables (the common ones come from the kit's service template). */
export const importsEnv = {
  /** The passport service, which creates each row's passport (CreatePassports). */
  PASSPORT_ADDR: address.default("127.0.0.1:50051"),
  /**
   * `on`: this process runs the background worker (every replica may); `off`: it only serves the API (a test that
   * looks at a queued job, or a replica kept for reads).
   */
  IMPORTS_WORKER: z.enum(["on", "off"]).default("on"),
  /** Batches one process runs at once (each of another job). */
  IMPORTS_WORKER_CONCURRENCY: positiveInt(2),
  /** Rows sent to passport in one CreatePassports call. */
  IMPORTS_BATCH_ROWS: z.coerce.number().int().min(1).max(500).default(250),
  /** How long a worker holds a job for one batch; a worker that died loses it after this. */
  IMPORTS_LEASE_MS: positiveInt(15_000),
  /** How often an idle worker looks for a job (a POST served by this process wakes it at once). */
  IMPORTS_POLL_MS: positiveInt(250),
  /** Tries of a job whose batch failed before the job is `failed`. */
  IMPORTS_MAX_ATTEMPTS: positiveInt(10),
};
