import { sql, type Kysely } from "kysely";

/**
 * Variants (a passport's sizes and colours, each with a GTIN claimed through the passport service), battery units,
 * their status history and readings, the per-passport tallies the limits read, and the daily destructive-operation
 * usage. The kit's tables (keyed writes' results, events) are made by the template's migrate.
 */
const STATEMENTS = `
    create table variant (
      id text primary key,
      organization_id text not null,
      livemode boolean not null,
      passport_id text not null,
      seq bigint generated always as identity,
      gtin text not null,
      size text,
      colour text,
      -- lower(size) and lower(colour) joined: size/colour pairs are unique case-insensitively.
      pair_key text not null,
      agent_key_id text,
      agent_key_name text,
      agent_at timestamptz,
      agent_source_class text,
      created_at timestamptz not null default now()
    );
    create unique index variant_gtin_key on variant (organization_id, livemode, passport_id, gtin);
    create unique index variant_pair_key on variant (organization_id, livemode, passport_id, pair_key);
    create index variant_list_idx on variant (organization_id, livemode, passport_id, seq);

    create table unit (
      id text primary key,
      organization_id text not null,
      livemode boolean not null,
      passport_id text not null,
      seq bigint generated always as identity,
      unit_serial text not null,
      status text,
      created_at timestamptz not null default now()
    );
    create unique index unit_serial_key on unit (organization_id, livemode, passport_id, unit_serial);
    create index unit_list_idx on unit (organization_id, livemode, passport_id, seq);
    create index unit_status_idx on unit (organization_id, livemode, passport_id, status, seq);

    create table unit_status_change (
      id text primary key,
      organization_id text not null,
      livemode boolean not null,
      unit_id text not null,
      seq bigint generated always as identity,
      from_status text,
      to_status text not null,
      key_id text not null,
      changed_at timestamptz not null default now()
    );
    create index unit_status_change_unit_idx on unit_status_change (organization_id, livemode, unit_id, seq);

    create table unit_reading (
      id text primary key,
      organization_id text not null,
      livemode boolean not null,
      passport_id text not null,
      unit_id text not null,
      seq bigint generated always as identity,
      field text not null,
      value jsonb not null,
      source text not null,
      observed_on date not null,
      note text,
      document_id text,
      key_id text not null,
      recorded_at timestamptz not null default now()
    );
    create index unit_reading_list_idx on unit_reading (organization_id, livemode, unit_id, seq);
    create index unit_reading_latest_idx on unit_reading (organization_id, livemode, unit_id, field, observed_on desc, seq desc);

    create table passport_tally (
      organization_id text not null,
      livemode boolean not null,
      passport_id text not null,
      variant_count int not null default 0,
      unit_count int not null default 0,
      primary key (organization_id, livemode, passport_id)
    );

    create table destructive_usage (
      organization_id text not null,
      livemode boolean not null,
      day date not null,
      used int not null,
      primary key (organization_id, livemode, day)
    );
`;

export async function up(db: Kysely<any>): Promise<void> {
  for (const statement of STATEMENTS.split(/;\s*\n/).map((x) => x.replace(/^\s*--.*$/gm, "").trim()))
    if (statement) await sql.raw(statement).execute(db);
}
