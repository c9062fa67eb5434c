/**
 * `npm start`: the whole system on one machine. Embedded Postgres when
 * DATABASE_URL is unset, migrations, every registered service (services.json)
 * on its default port, each in a worker thread of this process
 * (STACK_HOSTING=process: each as its own process), the gateway on
 * http://127.0.0.1:8080/v1, and demo credentials in .dpp/credentials.json.
 * PORT (the gateway) and <NAME>_PORT (each gRPC service, e.g. PASSPORT_PORT)
 * override the ports. A service that dies is restarted with backoff and logged
 * (supervise.ts); the stack stops on Ctrl-C, or when a service keeps dying
 * (more than 5 restarts within 5 minutes). DPP_REPLICAS=N runs every service
 * N times (<NAME>_REPLICAS for one service, e.g. PASSPORT_REPLICAS=3): each
 * replica on a port of its own, its callers given them all, the gateway's and
 * the public surface's replicas behind their one port (README, "Replicas").
 *
 * Runs from its bundle (tools/stack/build.mjs, .dpp/build/current/stack.js), as do
 * the services. Each service writes its log to .dpp/logs/<name>.log (a replica of
 * several: <name>-<n>.log; emptied at each
 * start) itself; STACK_LOGS=terminal has them write to this terminal instead.
 * The terminal shows the stack's own lines: progress, readiness, credentials,
 * supervision, and the end of a dead service's log.
 */
import { execFile } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import type { Credentials } from "./demo";
import { startEmbeddedPostgres, type LocalPostgres } from "./embedded-postgres";
import { startPortalSimulator, type PortalSimulatorRun } from "./portal-simulator";
import { onStopSignal } from "./signals";
import { portsFromEnv, publicPortFromEnv, replicasFromEnv } from "./ports";
import {
  buildBundles,
  gatewayBaseUrl,
  hostingFromEnv,
  logFileOf,
  migrateAll,
  replicaId,
  REPO_ROOT,
  startStack,
  tailOf,
  useBundlesIn,
  type Hosting,
  type ServiceName,
  type Stack,
} from "./stack";
import { describeSupervisionEvent } from "./supervise";

const DPP_DIR = path.join(REPO_ROOT, ".dpp");
const LOG_DIR = path.join(DPP_DIR, "logs");

/**
 * Postgres connections per service process of the local stack unless DB_POOL_MAX is set (10 in production):
 * one developer's requests, the outbox relay and the leader jobs fit in it.
 */
const LOCAL_POOL_MAX = "4";

/**
 * Pooled connections idle this long are closed unless DB_POOL_IDLE_MS is set (30 s in production): at idle
 * the stack keeps only the connections its pollers and listeners use, each a Postgres process of 13 to 16 MB.
 */
const LOCAL_POOL_IDLE_MS = "5000";

/** Where the services' logs go: files in .dpp/logs (default), or this terminal (STACK_LOGS=terminal). */
function logsFromEnv(env: NodeJS.ProcessEnv): "files" | "terminal" {
  const value = env.STACK_LOGS ?? "";
  if (value === "" || value === "files") return "files";
  if (value === "terminal") return "terminal";
  throw new Error(`STACK_LOGS must be "files" or "terminal", got "${value}"`);
}

/** The demo organization and keys (demo.ts), made by a short-lived process that loads the gateway's code. */
function demoCredentials(bundle: string, databaseUrl: string, file: string, baseUrl: string) {
  return new Promise<Credentials>((resolve, reject) => {
    execFile(
      process.execPath,
      [bundle, file, baseUrl],
      { cwd: REPO_ROOT, env: { ...process.env, DATABASE_URL: databaseUrl } },
      (err, _stdout, stderr) => {
        if (err) reject(new Error(`the demo credentials could not be made: ${stderr.trim() || err.message}`));
        else resolve(JSON.parse(fs.readFileSync(file, "utf8")) as Credentials);
      },
    );
  });
}

/** The end of a service's log on this terminal, after a death (files only: otherwise it is above). */
function printTail(logDir: string | undefined, service: string) {
  if (!logDir) return;
  const file = logFileOf(logDir, service);
  const tail = tailOf(file, 10);
  if (tail) console.error(`[stack] the end of ${path.relative(process.cwd(), file)}:\n${tail}`);
}

/** Where the admin CLI finds the running stack's database. */
function writeStackFile(content: Record<string, string>) {
  fs.mkdirSync(DPP_DIR, { recursive: true });
  fs.writeFileSync(path.join(DPP_DIR, "stack.json"), JSON.stringify(content, null, 2) + "\n", {
    mode: 0o600,
  });
}

async function main() {
  const started = Date.now();
  let ports: Record<ServiceName, number>;
  let publicPort: number;
  let logDir: string | undefined;
  let hosting: Hosting;
  let replicas: Record<ServiceName, number>;
  try {
    replicas = replicasFromEnv(process.env);
    ports = portsFromEnv(process.env);
    publicPort = publicPortFromEnv(process.env);
    logDir = logsFromEnv(process.env) === "files" ? LOG_DIR : undefined;
    hosting = hostingFromEnv(process.env);
  } catch (err) {
    console.error(err instanceof Error ? err.message : err);
    process.exit(2);
  }
  if (logDir) {
    fs.mkdirSync(logDir, { recursive: true });
    for (const name of Object.keys(ports) as ServiceName[])
      for (let i = 0; i < replicas[name]; i++)
        fs.writeFileSync(logFileOf(logDir, replicaId(name, i, replicas[name])), "");
  }
  // Run from its bundle (.dpp/build/<hash>/stack.js, npm start), the services' bundles are its siblings,
  // of the same build; run from source, they are built (when the sources changed) while Postgres starts.
  const self = require.main?.filename;
  if (
    self &&
    path.basename(self) === "stack.js" &&
    fs.existsSync(path.join(path.dirname(self), "inputs.json"))
  )
    useBundlesIn(path.dirname(self));
  const building = buildBundles();
  building.catch(() => undefined);
  let pg: LocalPostgres | undefined;
  let databaseUrl = process.env.DATABASE_URL;
  if (!databaseUrl) {
    console.log("Starting embedded Postgres (data in .dpp/pgdata)...");
    pg = await startEmbeddedPostgres(DPP_DIR);
    databaseUrl = pg.url;
  }
  let stack: Stack | undefined;
  let portal: PortalSimulatorRun | undefined;
  let stopping = false;
  const shutdown = async (code: number) => {
    if (stopping) return;
    stopping = true;
    console.log("\nStopping services...");
    await stack?.stop().catch((e: unknown) => console.error(e));
    await portal?.stop().catch((e: unknown) => console.error(e));
    if (pg) {
      console.log("Stopping embedded Postgres...");
      await pg.stop().catch((e: unknown) => console.error(e));
    }
    console.log("Stopped.");
    process.exit(code);
  };
  onStopSignal(() => void shutdown(0));

  try {
    writeStackFile({ database_url: databaseUrl });
    await building;
    console.log("Migrating every service schema...");
    await migrateAll(databaseUrl, logDir, hosting);
    console.log("Starting the services...");
    // The demo organization and keys are made (in the gateway's schema) while the services start.
    const file = path.join(DPP_DIR, "credentials.json");
    const demo = demoCredentials((await building)["stack-demo"]!, databaseUrl, file, gatewayBaseUrl(ports));
    demo.catch(() => undefined);
    const env: Record<string, string> = {
      DB_POOL_MAX: process.env.DB_POOL_MAX || LOCAL_POOL_MAX,
      DB_POOL_IDLE_MS: process.env.DB_POOL_IDLE_MS || LOCAL_POOL_IDLE_MS,
    };
    if (process.env.REDIS_URL) env.REDIS_URL = process.env.REDIS_URL;
    if (process.env.PORTAL_BASE_URL) {
      env.PORTAL_BASE_URL = process.env.PORTAL_BASE_URL;
      env.PORTAL_API_KEY = process.env.PORTAL_API_KEY ?? "";
    } else {
      portal = await startPortalSimulator((await building)["portal-simulator"]!);
      env.PORTAL_BASE_URL = portal.url;
      env.PORTAL_API_KEY = portal.apiKey;
      console.log(
        `[stack] affichage portal simulator at ${portal.url} (a simulator, not the official portal)`,
      );
    }
    stack = await startStack({
      hosting,
      databaseUrl,
      ports,
      publicPort,
      replicas,
      logLevel: process.env.LOG_LEVEL ?? "info",
      logDir,
      env,
      supervise: {
        report: (event) => {
          const line = `[stack] ${describeSupervisionEvent(event)}`;
          if (event.kind === "restarted") console.log(line);
          else console.error(line);
          if (event.kind !== "restarted") printTail(logDir, event.service);
          if (event.kind === "gave_up") void shutdown(1);
        },
      },
    });
    for (const s of Object.values(stack.services))
      for (const r of s.replicas)
        console.log(
          `[stack] ${r.id} ready at ${r.address} (${r.unit.id}, ${((r.readyInMs ?? 0) / 1000).toFixed(1)} s); metrics ${r.metricsUrl}`,
        );
    for (const [front, handed] of Object.entries(stack.balanced))
      console.log(
        `[stack] ${front === "gateway" ? stack.baseUrl : stack.publicUrl} balanced over ${handed.length} replicas`,
      );
    writeStackFile({
      database_url: databaseUrl,
      passport_addr: stack.services.passport.address,
      filings_addr: stack.services.filings.address,
      // The admin CLI's `import` sends its rows to the API here.
      base_url: stack.baseUrl,
      webhooks_addr: stack.services.webhooks.address,
      // The admin CLI signs its calls to passport with this key (internal authentication).
      admin_private_key: stack.adminKey,
    });
    const creds = await demo;
    const secs = ((Date.now() - started) / 1000).toFixed(1);
    console.log(`
DPP platform is running (ready in ${secs} s)

  API          ${stack.baseUrl}
  public pages ${stack.publicUrl}/p/<passport id>
  resolver     ${stack.resolverUrl}/01/<gtin14>
  organization ${creds.organization_id}
  test key     ${creds.test_key}
  live key     ${creds.live_key}
  credentials  ${path.relative(process.cwd(), file) || file}
  logs         ${logDir ? `${path.relative(process.cwd(), logDir) || logDir}/<service>.log  (tail -f ${path.relative(process.cwd(), logDir)}/*.log)` : "this terminal (STACK_LOGS=terminal)"}

Try:
  curl -s ${stack.baseUrl}/whoami -H "Authorization: Bearer ${creds.test_key}"
  curl -s -X POST ${stack.baseUrl}/organizations/${creds.organization_id}/passports \\
       -H "Authorization: Bearer ${creds.test_key}" -H "Content-Type: application/json" \\
       -d '{"category":"textile","data":{"product_name":"Organic T-shirt"}}'

Press Ctrl-C to stop.
`);
  } catch (err) {
    console.error("The stack could not start:", err instanceof Error ? err.message : err);
    await shutdown(1);
  }
}

void main();
