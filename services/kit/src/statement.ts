/**
 * Statements built and compiled once: a query whose shape never changes (the same tables, columns and clauses
 * on every run, only its values differ) is built with Kysely's query builder on its first run and kept as its
 * compiled SQL; every later run only puts its values in. Kysely's own recipe for this is "splitting build,
 * compile and execute"; this is that recipe with named values.
 *
 * Building and compiling a query with Kysely costs about as much CPU as the rest of a one-row read of the
 * passport service together (8–14 µs of about 60 µs for the statement, measured on the benchmark machine), on
 * every run of the hottest reads and writes. On a database made by createDb the compiled statement goes
 * straight to its pool, prepared as Kysely's queries are (db.ts, `queryOnPool`); in a transaction it runs
 * through Kysely on the transaction's connection. Either way it runs where the built query would.
 *
 *   const byId = statement((db: Kysely<DB>, p: { org: string; id: string }) =>
 *     db.selectFrom("passport").selectAll().where("organization_id", "=", p.org).where("id", "=", p.id));
 *   const row = await byId.takeFirst(db, { org, id });
 *
 * The builder runs once with placeholders for the values: it must not look at them (a value that decides a
 * clause makes another statement), and a placeholder refuses to be read as a string or number, so that such a
 * builder fails on its first run instead of compiling the wrong query. Values are sent as query parameters
 * whatever they are. Statements are compiled for the kit's databases (createDb: Postgres, no plugins).
 */
import type { CompiledQuery, Compilable, Kysely } from "kysely";
import { queryOnPool } from "./db";
import type pg from "pg";

/** The stand-in for a named value while the statement is built. */
class Placeholder {
  constructor(readonly name: string) {}
  private refuse(): never {
    throw new Error(
      `statement: the value "${this.name}" was read while the statement was built; a statement's shape must not depend on its values`,
    );
  }
  toString(): string {
    return this.refuse();
  }
  valueOf(): never {
    return this.refuse();
  }
  [Symbol.toPrimitive](): never {
    return this.refuse();
  }
}

export interface Statement<DB, P, O> {
  /** Every row the statement answers. */
  execute(db: Kysely<DB>, values: P): Promise<O[]>;
  /** The first row, or undefined. */
  takeFirst(db: Kysely<DB>, values: P): Promise<O | undefined>;
  /** The SQL text, compiled on first use (for tests and EXPLAIN). */
  sql(db: Kysely<DB>): string;
}

interface Compiled {
  query: CompiledQuery;
  /** Per parameter: the name of the value it takes, or undefined for a constant of the builder (kept as is). */
  names: (string | undefined)[];
}

export function statement<DB, P extends Record<string, unknown>, O>(
  build: (db: Kysely<DB>, values: P) => Compilable<O>,
): Statement<DB, P, O> {
  let compiled: Compiled | undefined;
  const compile = (db: Kysely<DB>): Compiled => {
    if (compiled) return compiled;
    const placeholders = new Map<string, Placeholder>();
    const values = new Proxy({} as P, {
      get(_target, key) {
        if (typeof key !== "string") return undefined;
        let p = placeholders.get(key);
        if (!p) placeholders.set(key, (p = new Placeholder(key)));
        return p;
      },
    });
    const query = build(db, values).compile();
    compiled = {
      query,
      names: query.parameters.map((v) => (v instanceof Placeholder ? v.name : undefined)),
    };
    return compiled;
  };
  const run = async (db: Kysely<DB>, values: P): Promise<O[]> => {
    const { query, names } = compile(db);
    const parameters = new Array<unknown>(names.length);
    for (let i = 0; i < names.length; i++) {
      const name = names[i];
      parameters[i] = name === undefined ? query.parameters[i] : values[name];
    }
    // On a pool of the kit's: straight to the pool; in a transaction: through Kysely, on its connection.
    const direct = queryOnPool<O & pg.QueryResultRow>(db, query.sql, parameters);
    if (direct) return (await direct).rows as O[];
    const result = await db.executeQuery<O>({
      query: query.query,
      queryId: query.queryId,
      sql: query.sql,
      parameters,
    });
    return result.rows;
  };
  return {
    execute: run,
    takeFirst: async (db, values) => (await run(db, values))[0],
    sql: (db) => compile(db).query.sql,
  };
}
