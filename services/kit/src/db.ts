import { ApiError } from "@dpp/contract";
import pg from "pg";
import { Kysely, Migrator, PostgresDialect, sql, type Migration } from "kysely";
import type { Logger } from "./logger";

// int8 (bigserial ids, count(*)) as JS numbers: every value we keep stays far below 2^53.
pg.types.setTypeParser(20, (v) => Number(v));
// date stays the YYYY-MM-DD string the API speaks.
pg.types.setTypeParser(1082, (v) => v);

export interface DbOptions {
  url: string;
  /** The service's own schema; unqualified table names resolve to it. */
  schema: string;
  applicationName: string;
  max?: number;
  /** A connection idle this long in the pool is closed (30 s by default). */
  idleTimeoutMs?: number;
  log?: Logger;
}

export function createPool(o: DbOptions): pg.Pool {
  const pool = new pg.Pool({
    connectionString: o.url,
    max: o.max ?? 10,
    idleTimeoutMillis: o.idleTimeoutMs ?? 30_000,
    connectionTimeoutMillis: 5_000,
    statement_timeout: 15_000,
    idle_in_transaction_session_timeout: 30_000,
    application_name: o.applicationName,
    options: `-c search_path=${o.schema}`,
  });
  // An idle client's error would otherwise crash the process.
  pool.on("error", (err: Error & { code?: string }) =>
    o.log?.warn({ err: { message: err.message, code: err.code } }, "postgres connection lost"),
  );
  // So would the error of a client held out of the pool between queries (e.g. a job's advisory-lock session)
  // when its connection is cut: the pool listens to idle clients only. Its next query fails instead.
  pool.on("connect", (client) => client.on("error", () => undefined));
  return pool;
}

/** A Kysely instance bound to one service schema. DB describes that schema only. */
export function createDb<DB>(o: DbOptions): Kysely<DB> {
  return new Kysely<DB>({ dialect: new PostgresDialect({ pool: createPool(o) }) });
}

/**
 * Runs a service's migrations into its own schema, with the migration tables
 * inside that schema. Idempotent; concurrent runs are serialised by Kysely's lock.
 */
export async function migrateSchema(
  db: Kysely<any>,
  schema: string,
  migrations: Record<string, Migration>,
): Promise<string[]> {
  try {
    await sql`create schema if not exists ${sql.id(schema)}`.execute(db);
  } catch (err) {
    // Two processes creating the same schema at once: "if not exists" is not atomic
    // and the loser gets a unique violation on pg_namespace. The schema exists; go on.
    if (!isUniqueViolation(err)) throw err;
  }
  const migrator = new Migrator({
    db: db.withSchema(schema),
    provider: { getMigrations: async () => migrations },
    migrationTableSchema: schema,
  });
  const { error, results } = await migrator.migrateToLatest();
  if (error) throw error;
  return (results ?? []).filter((r) => r.status === "Success").map((r) => r.migrationName);
}

/**
 * The `migrate` command of a service: opens one connection to `url`, applies the
 * service's migrations to its schema, and closes the connection.
 */
export async function migrateDatabase(
  url: string,
  schema: string,
  migrations: Record<string, Migration>,
): Promise<string[]> {
  const db = createDb<unknown>({ url, schema, applicationName: `${schema}-migrate`, max: 1 });
  try {
    return await migrateSchema(db, schema, migrations);
  } finally {
    await db.destroy();
  }
}

/**
 * ANALYZE of every ordinary table of `schema` (the migration step runs it for
 * each service): returns the tables analyzed.
 */
export async function analyzeSchema(url: string, schema: string): Promise<string[]> {
  const db = createDb<unknown>({ url, schema, applicationName: `${schema}-analyze`, max: 1 });
  try {
    const { rows } = await sql<{ name: string }>`
      select c.relname as name from pg_class c join pg_namespace n on n.oid = c.relnamespace
      where n.nspname = ${schema} and c.relkind in ('r', 'p') order by c.relname`.execute(db);
    for (const { name } of rows) await sql`analyze ${sql.table(`${schema}.${name}`)}`.execute(db);
    return rows.map((r) => r.name);
  } finally {
    await db.destroy();
  }
}

/** Postgres unique violation (23505), optionally on one constraint. */
export function isUniqueViolation(err: unknown, constraint?: string): boolean {
  const e = err as { code?: string; constraint?: string };
  return e?.code === "23505" && (constraint === undefined || e.constraint === constraint);
}

/** A 64-bit advisory lock key from a text (stable across processes). */
export function lockKey(text: string) {
  return sql<number>`hashtextextended(${text}, 0)`;
}

/** Errors of a lost or refused database connection (as opposed to a query the database refused). */
const CONNECTION_ERRNOS = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ETIMEDOUT",
  "EPIPE",
  "EHOSTUNREACH",
  "ENOTFOUND",
  "EAI_AGAIN",
]);
const CONNECTION_SQLSTATES = new Set(["57P01", "57P02", "57P03", "53300"]);
const CONNECTION_MESSAGES =
  /Connection terminated|timeout exceeded when trying to connect|not queryable|is not currently accepting connections|the database system is (starting up|shutting down)/i;

/**
 * Whether an error is the database being out of reach for a moment (a restart, a failover, a dropped connection):
 * answered 500 internal_error with `details.reason` `database_unavailable` and `Retry-After: 1`; the pool opens
 * new connections by itself once the database answers again.
 */
export function isDatabaseUnavailable(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown } | null;
  if (!e || typeof e !== "object") return false;
  const code = typeof e.code === "string" ? e.code : "";
  if (CONNECTION_ERRNOS.has(code) || CONNECTION_SQLSTATES.has(code) || code.startsWith("08")) return true;
  return typeof e.message === "string" && CONNECTION_MESSAGES.test(e.message);
}

/** The answer to a request that met the database out of reach: 500 with Retry-After, never recorded as a refusal. */
export function databaseUnavailable(): ApiError {
  return new ApiError(
    "internal_error",
    "The database is unavailable for a moment; retry shortly.",
    { reason: "database_unavailable" },
    { "Retry-After": "1" },
  );
}
