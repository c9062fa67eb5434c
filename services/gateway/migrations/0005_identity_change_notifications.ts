import { sql, type Kysely } from "kysely";

/**
 * Every change of the rows the gateway caches is announced on the channel gateway_identity_changed, in the
 * changing transaction (delivered at commit, never for a rollback), whoever makes it: the gateway, the admin
 * CLI or a hand-written statement. Payloads: `organization:<id>`, `key:<id>`, and `access:<client organization
 * id>` for a grant or a managing link. An update announces the old row and the new one (the same payload twice
 * in a transaction is delivered once).
 */
const TABLES = [
  ["organization", "organization", "id"],
  ["api_key", "key", "id"],
  ["grant", "access", "organization_id"],
  ["managed_link", "access", "client_organization_id"],
] as const;

export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    create function identity_changed() returns trigger language plpgsql as $$
    begin
      if tg_op <> 'INSERT' then
        perform pg_notify('gateway_identity_changed', tg_argv[0] || ':' || (to_jsonb(old) ->> tg_argv[1]));
      end if;
      if tg_op <> 'DELETE' then
        perform pg_notify('gateway_identity_changed', tg_argv[0] || ':' || (to_jsonb(new) ->> tg_argv[1]));
      end if;
      return null;
    end $$`.execute(db);
  for (const [table, kind, column] of TABLES)
    await sql`
      create trigger ${sql.id(`${table}_changed`)} after insert or update or delete on ${sql.id(table)}
      for each row execute function identity_changed(${sql.lit(kind)}, ${sql.lit(column)})`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const [table] of TABLES)
    await sql`drop trigger ${sql.id(`${table}_changed`)} on ${sql.id(table)}`.execute(db);
  await sql`drop function identity_changed()`.execute(db);
}
