// eslint-disable-next-line @typescript-eslint/triple-slash-reference -- the declaration of an untyped module, for every package that compiles this file
/// <reference path="./pg-utils.d.ts" />
import { ApiError } from "@dpp/contract";
import pg from "pg";
import { prepareValue } from "pg/lib/utils";
import { Kysely, Migrator, PostgresDialect, sql, type Migration, type PostgresPoolClient } from "kysely";
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
  /**
   * Distinct statements Kysely's queries with values are prepared for, per pool (named, parsed and planned once
   * per connection; see `PreparedStatements`). 0: none, every query parsed and planned each time (the one setting
   * for a connection pooler that keeps no prepared statement across transactions). Default
   * PREPARED_STATEMENTS_DEFAULT.
   */
  preparedStatements?: number;
  log?: Logger;
}

/**
 * The statements a pool prepares by default: every statement a service sends with values fits (a service sends a
 * few dozen distinct ones), and a text generated from data (a multi-row insert of N rows) cannot grow the set
 * past it.
 */
export const PREPARED_STATEMENTS_DEFAULT = 200;

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

interface Owned {
  pool: pg.Pool;
  prepared: PreparedStatements;
  options: DbOptions;
  /** The pool of `queryAside`, made at its first use. */
  aside?: pg.Pool;
}

/** The pool and prepared statements of each database made by `createDb`, for `withConnection` and `queryOnPool`. */
const owned = new WeakMap<Kysely<any>, Owned>();

/**
 * A Kysely instance bound to one service schema. DB describes that schema only. Its queries with values run as
 * prepared statements (`PreparedStatements`).
 */
export function createDb<DB>(o: DbOptions): Kysely<DB> {
  const pool = createPool(o);
  const prepared = new PreparedStatements(o.preparedStatements ?? PREPARED_STATEMENTS_DEFAULT);
  const own: Owned = { pool, prepared, options: o };
  const db = new Kysely<DB>({
    dialect: new PostgresDialect({
      pool: {
        connect: async () => prepared.client(await pool.connect()),
        end: async () => {
          await pool.end();
          await own.aside?.end();
        },
      },
    }),
  });
  owned.set(db, own);
  return db;
}

/** Connections of the pool of `queryAside`, per database. */
export const ASIDE_POOL_MAX = 2;

/**
 * Runs one statement, committed by itself, on a connection that is never one of db's pool (db made by
 * `createDb`): a small pool of its own (ASIDE_POOL_MAX connections, made at the first use), whose connections are
 * held for one statement each. So work that holds a connection of db's pool, a keyed call's transaction, can
 * commit a statement of its own (`once`, effects.ts) without waiting for a second connection of that pool, which
 * calls like it may all be holding.
 */
export async function queryAside<R extends pg.QueryResultRow>(
  db: Kysely<any>,
  text: string,
  values: readonly unknown[],
): Promise<pg.QueryResult<R>> {
  const own = owned.get(db);
  if (!own) throw new Error("queryAside needs a database made by createDb");
  own.aside ??= createPool({ ...own.options, max: ASIDE_POOL_MAX });
  return own.aside.query<R>(text, values as unknown[]);
}

/**
 * Kysely's queries with values as named prepared statements: Postgres parses and plans a statement once per
 * connection, and after five runs keeps a generic plan (plan_cache_mode auto) instead of planning it again for
 * every run; node-postgres sends Bind and Execute only. Planning was the larger part of Postgres' time for the
 * short statements of a request (docs/decisions/0034-prepared-statements.md).
 *
 * A statement is named by its text, the same name on every connection of the pool, for the first `max` distinct
 * texts; later texts run unnamed, as does a run given a list longer than PREPARED_LIST_MAX (planned for its
 * values), and every query without values (begin, commit, the several statements of
 * one message: the simple protocol, which cannot prepare).
 *
 * A table changed under a prepared statement (a migration of a rolling deploy that adds a column to a table read
 * with `select *`) fails its next run with "cached plan must not change result type": the text then takes a new
 * name, so every connection prepares it again, and the query runs once more when it ran outside a transaction
 * (inside one, the failure aborted the transaction, and the retry fails as the caller's next statement would).
 */
export class PreparedStatements {
  private readonly names = new Map<string, string>();
  private generation = 0;
  /** The names each connection has prepared (a statement runs with EXECUTE only where it is known: `runAfter`). */
  private readonly preparedOn = new WeakMap<pg.PoolClient, Set<string>>();

  constructor(private readonly max: number) {}

  /** Whether any statement is prepared (a bound of 0: none). */
  get enabled(): boolean {
    return this.max > 0;
  }

  /** The statement name of a query text; undefined: run it unnamed. */
  nameOf(text: string): string | undefined {
    const known = this.names.get(text);
    if (known !== undefined || this.names.size >= this.max) return known;
    const name = `kit_${this.names.size}_${this.generation}`;
    this.names.set(text, name);
    return name;
  }

  /** Forgets the name of a text whose prepared plan became stale: the next run prepares it under a new one. */
  renew(text: string): string | undefined {
    this.names.delete(text);
    this.generation++;
    return this.nameOf(text);
  }

  /** The connection as Kysely's driver uses it (queries and release; no cursor), its queries with values prepared. */
  client(client: pg.PoolClient): PostgresPoolClient {
    const query = (text: string, values: readonly unknown[]) => this.run(client, text, values);
    return { query, release: () => client.release() } as unknown as PostgresPoolClient;
  }

  /** A statement on a connection of `pool`, released after it answered (as Kysely runs a query on the pool). */
  async onPool(pool: pg.Pool, text: string, values: readonly unknown[]): Promise<pg.QueryResult> {
    const client = await pool.connect();
    try {
      return await this.run(client, text, values);
    } finally {
      client.release();
    }
  }

  private async run(
    client: pg.PoolClient,
    text: string,
    values: readonly unknown[],
  ): Promise<pg.QueryResult> {
    const name = values.length > 0 && !hasLongList(values) ? this.nameOf(text) : undefined;
    if (name === undefined) return client.query(text, values as unknown[]);
    try {
      return this.prepared(client, name, await client.query({ name, text, values: values as unknown[] }));
    } catch (err) {
      if (!isStalePlan(err)) throw err;
      const renamed = this.renew(text)!;
      return this.prepared(
        client,
        renamed,
        await client.query({ name: renamed, text, values: values as unknown[] }),
      );
    }
  }

  private prepared(client: pg.PoolClient, name: string, result: pg.QueryResult): pg.QueryResult {
    let names = this.preparedOn.get(client);
    if (!names) this.preparedOn.set(client, (names = new Set()));
    names.add(name);
    return result;
  }

  /**
   * `lead` (statements without values), then the query, and the query's answer. In one message (the simple
   * protocol) when the query has no values, or its statement is prepared on this connection: it then runs as
   * `execute <name>(<its values as literals>)`, with the plan the connection keeps. Otherwise `lead` goes alone
   * first (the query is then prepared, for the next time). A failed statement of the message fails the query,
   * and the statements after it do not run.
   */
  async runAfter(
    client: pg.PoolClient,
    lead: string,
    text: string,
    values: readonly unknown[],
  ): Promise<pg.QueryResult> {
    const name = values.length > 0 && !hasLongList(values) ? this.names.get(text) : undefined;
    const executed =
      name !== undefined && this.preparedOn.get(client)?.has(name)
        ? executeStatement(name, values)
        : undefined;
    if (values.length > 0 && executed === undefined) {
      await client.query(lead);
      return this.run(client, text, values);
    }
    const statement = executed ?? text;
    const results = (await client.query(`${lead};\n${statement}`)) as pg.QueryResult | pg.QueryResult[];
    return Array.isArray(results) ? results[results.length - 1]! : results;
  }
}

/**
 * The longest list a prepared statement takes: a run given a longer one is planned for its values (unnamed).
 * A generic plan knows nothing of an array parameter's length and takes `unnest($1)` for 10 rows: a join of a
 * 1000-item list against a table's rows became a nested loop comparing every pair (175 ms for the 1000 claims
 * of a variant removal, against 1 ms planned for the list). Planning costs well under a millisecond, a small
 * share of a statement that handles this many items.
 */
export const PREPARED_LIST_MAX = 16;

function hasLongList(values: readonly unknown[]): boolean {
  for (const v of values) if (Array.isArray(v) && v.length > PREPARED_LIST_MAX) return true;
  return false;
}

/**
 * Values as the literals of a statement's argument list, for a message of several statements (the simple
 * protocol, which cannot bind values): in the text form node-postgres would send them (its own `prepareValue`:
 * dates, arrays, JSON; bytes as a bytea hex literal), each coerced to its parameter's type by Postgres as a bound
 * value is. undefined when a value cannot travel in a message's text (a NUL character).
 */
export function valueLiterals(values: readonly unknown[]): string | undefined {
  const out: string[] = [];
  for (const v of values) {
    const p = prepareValue(v) as string | Buffer | null;
    if (p === null) out.push("null");
    else if (Buffer.isBuffer(p)) out.push(`E'\\\\x${p.toString("hex")}'`);
    else if (p.includes("\0")) return undefined;
    else out.push(literal(p));
  }
  return out.join(", ");
}

/**
 * A string as an SQL literal, as pg.escapeLiteral writes it. pg's copies the text a character at a time; a text
 * without a quote or a backslash (ids, keys, fingerprints, hex) is the same text in quotes.
 */
function literal(s: string): string {
  return s.includes("'") || s.includes("\\") ? pg.escapeLiteral(s) : `'${s}'`;
}

/** `execute <name>(<values>)`: a run of the statement prepared on the connection under `name` (`valueLiterals`). */
export function executeStatement(name: string, values: readonly unknown[]): string | undefined {
  const args = valueLiterals(values);
  return args === undefined ? undefined : `execute ${name}(${args})`;
}

/** Postgres' refusal to run a prepared statement whose result columns changed since it was prepared. */
function isStalePlan(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown } | null;
  return (
    e?.code === "0A000" && typeof e.message === "string" && e.message.includes("cached plan must not change")
  );
}

/** Whether db (made by `createDb`) prepares statements: false where `preparedStatements` is 0 (a pooler that keeps none). */
export function preparesStatements(db: Kysely<any>): boolean {
  const own = owned.get(db);
  if (!own) throw new Error("preparesStatements needs a database made by createDb");
  return own.prepared.enabled;
}

/**
 * Runs fn on one connection of db (made by `createDb`): `conn` sends Kysely's queries on it, and `client` is its
 * node-postgres client, for what Kysely cannot send: several statements in one message (a query without values
 * goes in node-postgres' simple protocol, and its answer is one result per statement, which Kysely's driver does
 * not hand back). The connection returns to the pool when fn settles: fn ends any transaction it opened on it.
 * `conn` is a Kysely of its own over that one connection (2 µs to make), so nothing here needs an
 * AsyncLocalStorage, whose async hooks every promise of the process would pay for (decision 0037).
 */
/**
 * Runs a compiled statement on the pool of a database made by createDb as Kysely would run it there (on a
 * connection of the pool, prepared), without Kysely's executor and its layers of promises (statement.ts).
 * Undefined for any other database: a transaction's statements run through Kysely, on its connection.
 */
export function queryOnPool<R extends pg.QueryResultRow>(
  db: Kysely<any>,
  text: string,
  values: readonly unknown[],
): Promise<pg.QueryResult<R>> | undefined {
  const own = owned.get(db);
  return own ? (own.prepared.onPool(own.pool, text, values) as Promise<pg.QueryResult<R>>) : undefined;
}

export async function withConnection<DB, T>(
  db: Kysely<DB>,
  fn: (conn: Kysely<DB>, client: pg.PoolClient, lead: LeadingStatements) => Promise<T>,
): Promise<T> {
  const own = owned.get(db);
  if (!own) throw new Error("withConnection needs a database made by createDb");
  const client = await own.pool.connect();
  const bound = own.prepared.client(client);
  const lead = new LeadingStatements();
  const query = async (text: string, values: readonly unknown[]) => {
    const ahead = lead.take();
    if (ahead === undefined) return bound.query(text, values);
    try {
      return await own.prepared.runAfter(client, ahead, text, values);
    } catch (err) {
      lead.failure = err;
      throw err;
    }
  };
  const held = { query, release: () => undefined } as unknown as PostgresPoolClient;
  const conn = new Kysely<DB>({
    dialect: new PostgresDialect({ pool: { connect: async () => held, end: async () => undefined } }),
  });
  try {
    return await fn(conn, client, lead);
  } finally {
    client.release();
  }
}

/**
 * Statements (without values) that `withConnection` sends ahead of its connection's next Kysely query, in that
 * query's message when it can (`PreparedStatements.runAfter`): a round trip less for a query that follows them.
 */
export class LeadingStatements {
  private text: string | undefined;
  private wasSent = false;
  /** The failure of the query that carried them (theirs, or the query's own), if it failed. */
  failure: unknown;

  /** Sends `text` ahead of the next query. */
  set(text: string): void {
    this.text = text;
    this.wasSent = false;
    this.failure = undefined;
  }

  /** Whether they went with a query. */
  get sent(): boolean {
    return this.wasSent;
  }

  /** Whether statements wait for the next query (set, neither taken nor withdrawn yet). */
  get waiting(): boolean {
    return this.text !== undefined;
  }

  /** The statements waiting for a query, taken to be sent with it; undefined: none. */
  take(): string | undefined {
    const text = this.withdraw();
    if (text !== undefined) this.wasSent = true;
    return text;
  }

  /** The statements waiting for a query, taken back unsent (the next query goes alone); undefined: none. */
  withdraw(): string | undefined {
    const text = this.text;
    this.text = undefined;
    return text;
  }
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
  await createSchema(db, schema);
  const migrator = new Migrator({
    db: db.withSchema(schema),
    provider: { getMigrations: async () => migrations },
    migrationTableSchema: schema,
  });
  const { error, results } = await migrator.migrateToLatest();
  if (error) throw error;
  return (results ?? []).filter((r) => r.status === "Success").map((r) => r.migrationName);
}

/** Creates `schema` unless it exists. */
async function createSchema(db: Kysely<any>, schema: string): Promise<void> {
  try {
    await sql`create schema if not exists ${sql.id(schema)}`.execute(db);
  } catch (err) {
    // Two processes creating the same schema at once: "if not exists" is not atomic
    // and the loser gets a unique violation on pg_namespace. The schema exists; go on.
    if (!isUniqueViolation(err)) throw err;
  }
}

/**
 * Applies a part of the kit's own migrations (the tables the kit keeps for a service, such as the outbox, and its
 * changes to them) to `schema`, created if need be, with their own migration table `table` in that schema, so
 * that they never interleave with the service's own migrations. A migration whose name sorts before one already
 * applied is applied too (a part's `0000_tables`, added after the changes that followed the tables' creation by
 * the services).
 */
export async function migrateKitPart(
  url: string,
  schema: string,
  table: string,
  migrations: Record<string, Migration>,
): Promise<void> {
  const db = createDb<unknown>({ url, schema, applicationName: `${schema}-migrate-kit`, max: 1 });
  try {
    await createSchema(db, schema);
    const migrator = new Migrator({
      db: db.withSchema(schema),
      provider: { getMigrations: async () => migrations },
      migrationTableSchema: schema,
      migrationTableName: table,
      migrationLockTableName: `${table}_lock`,
      allowUnorderedMigrations: true,
    });
    const { error } = await migrator.migrateToLatest();
    if (error) throw error;
  } finally {
    await db.destroy();
  }
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
 * ANALYZE of every ordinary table of `schema` that holds a row (the migration step runs it for each service):
 * returns the tables analyzed.
 *
 * An empty table is left as it is. Analyzed, it would be known to be empty, and the planner would then take it for
 * the few pages it has: a statement prepared on it (the kit's named statements, a PL/pgSQL function's) keeps the
 * generic plan it made then, a sequential scan, for as long as its connection lives or until the next ANALYZE,
 * however large the table grows. Never analyzed, it is taken for at least ten pages, and a lookup by its key is
 * planned on the index (docs/decisions/0041-empty-tables-left-unanalyzed.md).
 */
export async function analyzeSchema(url: string, schema: string): Promise<string[]> {
  const db = createDb<unknown>({ url, schema, applicationName: `${schema}-analyze`, max: 1 });
  try {
    const { rows } = await sql<{ name: string }>`
      select c.relname as name from pg_class c join pg_namespace n on n.oid = c.relnamespace
      where n.nspname = ${schema} and c.relkind in ('r', 'p') order by c.relname`.execute(db);
    const analyzed: string[] = [];
    for (const { name } of rows) {
      const table = sql.table(`${schema}.${name}`);
      const held = await sql<{ any: boolean }>`select exists (select from ${table}) as any`.execute(db);
      if (!held.rows[0]?.any) continue;
      await sql`analyze ${table}`.execute(db);
      analyzed.push(name);
    }
    return analyzed;
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

/** A connection that dropped while a statement was in flight (not one that could not be opened). */
export function isConnectionLost(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown } | null;
  if (!e || typeof e !== "object") return false;
  if (e.code === "ECONNRESET" || e.code === "EPIPE" || e.code === "57P01") return true;
  return (
    typeof e.message === "string" && /Connection terminated(?! due to connection timeout)/i.test(e.message)
  );
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

/** What a pool of a database made by createDb holds now (the metrics dpp_pg_pool_connections and _max). */
export interface PoolStats {
  /** Connections lent out (a query or a transaction runs on each). */
  inUse: number;
  /** Connections open and free. */
  idle: number;
  /** Callers queued for a connection: the pool is at its max and all are lent out. */
  waiting: number;
  max: number;
}

/** The counts of db's pool (db made by createDb), read from node-postgres' own counters: no query. */
export function poolStats(db: Kysely<any>): PoolStats {
  const own = owned.get(db);
  if (!own) throw new Error("poolStats needs a database made by createDb");
  const { pool } = own;
  return {
    inUse: pool.totalCount - pool.idleCount,
    idle: pool.idleCount,
    waiting: pool.waitingCount,
    max: own.options.max ?? 10,
  };
}
