/**
 * `npm start`: the whole system on one machine. Embedded Postgres when
 * DATABASE_URL is unset, migrations, every registered service (services.json)
 * as its own process on its default port, the gateway on
 * http://127.0.0.1:8080/v1, and demo credentials in .dpp/credentials.json.
 * PORT (the gateway) and <NAME>_PORT (each gRPC service, e.g. PASSPORT_PORT)
 * override the ports. A service that dies is restarted with backoff and logged
 * (supervise.ts); the stack stops on Ctrl-C, or when a service keeps dying
 * (more than 5 restarts within 5 minutes).
 */
import fs from "node:fs";
import path from "node:path";
import { ensureDemoCredentials } from "./demo";
import { startEmbeddedPostgres, type LocalPostgres } from "./embedded-postgres";
import { portsFromEnv } from "./ports";
import { migrateAll, REPO_ROOT, startStack, type ServiceName, type Stack } from "./stack";
import { describeSupervisionEvent } from "./supervise";

const DPP_DIR = path.join(REPO_ROOT, ".dpp");

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
  try {
    ports = portsFromEnv(process.env);
  } catch (err) {
    console.error(err instanceof Error ? err.message : err);
    process.exit(2);
  }
  let pg: LocalPostgres | undefined;
  let databaseUrl = process.env.DATABASE_URL;
  if (!databaseUrl) {
    console.log("Starting embedded Postgres (data in .dpp/pgdata)...");
    pg = await startEmbeddedPostgres(DPP_DIR);
    databaseUrl = pg.url;
  }
  let stack: Stack | undefined;
  let stopping = false;
  const shutdown = async (code: number) => {
    if (stopping) return;
    stopping = true;
    console.log("\nStopping services...");
    await stack?.stop().catch((e: unknown) => console.error(e));
    if (pg) {
      console.log("Stopping embedded Postgres...");
      await pg.stop().catch((e: unknown) => console.error(e));
    }
    console.log("Stopped.");
    process.exit(code);
  };
  process.on("SIGINT", () => void shutdown(0));
  process.on("SIGTERM", () => void shutdown(0));

  try {
    writeStackFile({ database_url: databaseUrl });
    console.log("Migrating every service schema...");
    await migrateAll(databaseUrl);
    stack = await startStack({
      databaseUrl,
      ports,
      logLevel: process.env.LOG_LEVEL ?? "info",
      env: process.env.REDIS_URL ? { REDIS_URL: process.env.REDIS_URL } : {},
      supervise: {
        report: (event) => {
          const line = `[stack] ${describeSupervisionEvent(event)}`;
          if (event.kind === "restarted") console.log(line);
          else console.error(line);
          if (event.kind === "gave_up") void shutdown(1);
        },
      },
    });
    writeStackFile({
      database_url: databaseUrl,
      passport_addr: stack.services.passport.address,
      // The admin CLI signs its calls to passport with this key (internal authentication).
      admin_private_key: stack.adminKey,
    });
    const file = path.join(DPP_DIR, "credentials.json");
    const creds = await ensureDemoCredentials(databaseUrl, file, stack.baseUrl);
    const secs = ((Date.now() - started) / 1000).toFixed(1);
    console.log(`
DPP platform is running (ready in ${secs} s)

  API          ${stack.baseUrl}
  organization ${creds.organization_id}
  test key     ${creds.test_key}
  live key     ${creds.live_key}
  credentials  ${path.relative(process.cwd(), file) || file}

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
