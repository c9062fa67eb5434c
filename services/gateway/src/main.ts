import "./tracing";
import { createLogger, onShutdownSignal, runMain } from "@dpp/kit";
import { loadGatewayConfig } from "./config";
import { migrateGateway, startGateway } from "./gateway";

const log = createLogger("gateway");

runMain(log, {
  migrate: async () => {
    const config = loadGatewayConfig();
    await migrateGateway(config.DATABASE_URL, config.BUS_DATABASE_URL ?? config.DATABASE_URL);
  },
  serve: async () => {
    const config = loadGatewayConfig();
    const gw = await startGateway(config, log);
    onShutdownSignal(log, () => gw.stop());
  },
});
