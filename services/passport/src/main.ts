import "./tracing";
import { createLogger, onShutdownSignal, runMain } from "@dpp/kit";
import { loadPassportConfig } from "./config";
import { migratePassport, startPassportService } from "./service";

const log = createLogger("passport");

runMain(log, {
  migrate: () => migratePassport(loadPassportConfig()),
  serve: async () => {
    const svc = await startPassportService(loadPassportConfig(), log);
    onShutdownSignal(log, () => svc.stop());
  },
});
