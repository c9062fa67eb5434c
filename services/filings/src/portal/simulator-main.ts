/**
 * The portal simulator as its own process (npm start runs it): PORTAL_SIMULATOR_PORT (0 = any free port),
 * PORTAL_API_KEY, PORTAL_SIMULATOR_BRANDS (comma-separated brands that delegated filing). Prints its URL.
 */
import { startPortalSimulator } from "./simulator";

void (async () => {
  const sim = await startPortalSimulator({
    port: Number(process.env.PORTAL_SIMULATOR_PORT ?? 0),
    host: process.env.PORTAL_SIMULATOR_HOST ?? "127.0.0.1",
    apiKey: process.env.PORTAL_API_KEY ?? "simulator-key",
    authorizedBrands: (process.env.PORTAL_SIMULATOR_BRANDS ?? "").split(",").filter(Boolean),
  });
  process.stdout.write(`${JSON.stringify({ portal_simulator: sim.url })}\n`);
  const stop = () => void sim.close().then(() => process.exit(0));
  process.once("SIGTERM", stop);
  process.once("SIGINT", stop);
})();
