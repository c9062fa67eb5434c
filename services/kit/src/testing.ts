/**
 * Test support: every integration test file gets its own database on the real
 * Postgres (127.0.0.1:5432, or the embedded one the jest global setup started
 * when none answers), so tests run in parallel without sharing rows.
 */
import { randomBytes } from "node:crypto";
import pg from "pg";

export function adminDatabaseUrl(): string {
  return process.env.TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
}

export interface TestDatabase {
  url: string;
  name: string;
  drop(): Promise<void>;
}

function withDatabase(url: string, name: string): string {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
}

export async function createTestDatabase(label: string): Promise<TestDatabase> {
  const name = `t_${label
    .replace(/[^a-z0-9]/gi, "")
    .toLowerCase()
    .slice(0, 20)}_${randomBytes(5).toString("hex")}`;
  const admin = new pg.Client({ connectionString: adminDatabaseUrl() });
  await admin.connect();
  try {
    await admin.query(`create database ${name}`);
  } finally {
    await admin.end();
  }
  return {
    url: withDatabase(adminDatabaseUrl(), name),
    name,
    drop: async () => {
      const c = new pg.Client({ connectionString: adminDatabaseUrl() });
      await c.connect();
      try {
        await c.query(`drop database if exists ${name} with (force)`);
      } finally {
        await c.end();
      }
    },
  };
}

/** Polls `check` until it returns a value other than undefined, or fails after timeoutMs. */
export async function eventually<T>(
  check: () => Promise<T | undefined>,
  timeoutMs = 10000,
  stepMs = 50,
): Promise<T> {
  const until = Date.now() + timeoutMs;
  let lastErr: unknown;
  for (;;) {
    try {
      const v = await check();
      if (v !== undefined) return v;
    } catch (err) {
      lastErr = err;
    }
    if (Date.now() > until)
      throw new Error(`condition not met within ${timeoutMs} ms: ${String(lastErr ?? "")}`);
    await new Promise((r) => setTimeout(r, stepMs));
  }
}
