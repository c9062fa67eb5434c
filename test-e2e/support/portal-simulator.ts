/**
 * The affichage portal simulator as its own process, as `npm start` runs it: the one part of the system that
 * cannot run here is the government's portal, so the tests speak to the simulator, which answers the portal's
 * API (services/filings/src/portal/simulator.ts) and keeps its own record of every declaration it received.
 */
import { spawn, type ChildProcess } from "node:child_process";
import path from "node:path";
import readline from "node:readline";

const REPO_ROOT = path.join(__dirname, "..", "..");
const MAIN = path.join(REPO_ROOT, "services", "filings", "src", "portal", "simulator-main.ts");

export type Behaviour =
  "normal" | "slow" | "down" | "record_then_timeout" | "already_declared" | "delegation_refused";

export interface SimulatedDeclaration {
  declaration: { gtins: string[]; internalReference: string; brandId: string; mass: number };
  createdAt: string;
  requestId: string | null;
}

export interface PortalSimulatorProcess {
  url: string;
  apiKey: string;
  process: ChildProcess;
  behave(b: Behaviour): Promise<void>;
  authorize(brands: string[]): Promise<void>;
  /** The simulator's own record of the declarations it received. */
  declarations(internalReference?: string): Promise<SimulatedDeclaration[]>;
  /** What the simulated portal answers for a GTIN (GET /produits/{gtin}), as the filings service reads it. */
  product(gtin: string): Promise<{ status: number; body: any }>;
  stop(): Promise<void>;
}

export async function startPortalSimulatorProcess(
  apiKey = "simulated-portal-key",
): Promise<PortalSimulatorProcess> {
  const child = spawn(process.execPath, ["--import", "tsx", MAIN], {
    cwd: REPO_ROOT,
    env: { ...process.env, PORTAL_SIMULATOR_PORT: "0", PORTAL_API_KEY: apiKey },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const url = await new Promise<string>((resolve, reject) => {
    const lines = readline.createInterface({ input: child.stdout! });
    lines.once("line", (line) =>
      resolve((JSON.parse(line) as { portal_simulator: string }).portal_simulator),
    );
    child.once("exit", (code) => reject(new Error(`the portal simulator exited (${code})`)));
  });
  const control = async (p: string, body?: unknown) => {
    const res = await fetch(url + p, {
      method: body === undefined ? "GET" : "POST",
      headers: { "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (!res.ok) throw new Error(`simulator ${p}: ${res.status}`);
    return res.json() as Promise<any>;
  };
  return {
    url,
    apiKey,
    process: child,
    behave: async (behaviour) => void (await control("/_simulator/behaviour", { behaviour })),
    authorize: async (brands) => void (await control("/_simulator/brands", { brands })),
    declarations: async (ref) => {
      const all = (await control("/_simulator/declarations")).declarations as SimulatedDeclaration[];
      return ref === undefined ? all : all.filter((d) => d.declaration.internalReference === ref);
    },
    product: async (gtin) => {
      const res = await fetch(`${url}/produits/${gtin}`, { headers: { authorization: `Bearer ${apiKey}` } });
      return { status: res.status, body: await res.json() };
    },
    stop: async () => {
      if (child.exitCode !== null) return;
      const exited = new Promise((r) => child.once("exit", r));
      child.kill("SIGTERM");
      await exited;
    },
  };
}
