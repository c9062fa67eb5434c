/**
 * The affichage portal simulator of `npm start`: its own small process (services/filings/src/portal/
 * simulator-main.ts, bundled as portal-simulator.js), on PORTAL_SIMULATOR_PORT (default: any free port). The
 * filings service is pointed at it; the real portal is configured instead with PORTAL_BASE_URL and
 * PORTAL_API_KEY, and then no simulator runs.
 */
import { spawn } from "node:child_process";
import readline from "node:readline";

export interface PortalSimulatorRun {
  url: string;
  apiKey: string;
  stop(): Promise<void>;
}

export async function startPortalSimulator(bundle: string): Promise<PortalSimulatorRun> {
  const apiKey = "local-simulated-portal-key";
  const child = spawn(process.execPath, [bundle], {
    env: {
      ...process.env,
      PORTAL_SIMULATOR_PORT: process.env.PORTAL_SIMULATOR_PORT ?? "0",
      PORTAL_API_KEY: apiKey,
      // The brand the README's example delegation names.
      PORTAL_SIMULATOR_BRANDS: process.env.PORTAL_SIMULATOR_BRANDS ?? "demo-brand",
    },
    stdio: ["pipe", "pipe", "inherit"],
  });
  const url = await new Promise<string>((resolve, reject) => {
    readline
      .createInterface({ input: child.stdout! })
      .once("line", (l) => resolve((JSON.parse(l) as { portal_simulator: string }).portal_simulator));
    child.once("exit", (code) => reject(new Error(`the portal simulator exited (${code})`)));
  });
  return {
    url,
    apiKey,
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((r) => child.once("exit", r));
      child.kill("SIGTERM");
      await exited;
    },
  };
}
