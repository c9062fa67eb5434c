/** The reference stack's tables, in their own schema of the benchmark database. */
export const REFERENCE_SCHEMA = "bench_reference";

export const REFERENCE_DDL = `
create schema if not exists ${REFERENCE_SCHEMA};
create table if not exists ${REFERENCE_SCHEMA}.items (
  id text primary key,
  organization_id text not null,
  livemode boolean not null,
  category text not null,
  status text not null default 'draft',
  external_id text,
  gtin text,
  version integer not null default 1,
  data jsonb not null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  published_at timestamptz
);
create index if not exists items_tenant_id on ${REFERENCE_SCHEMA}.items (organization_id, livemode, id);
create table if not exists ${REFERENCE_SCHEMA}.outbox (
  id bigserial primary key,
  organization_id text not null,
  type text not null,
  payload jsonb not null,
  created_at timestamptz not null default now()
);
create table if not exists ${REFERENCE_SCHEMA}.variants (
  id text primary key,
  organization_id text not null,
  livemode boolean not null,
  passport_id text not null,
  gtin text not null,
  size text,
  colour text,
  created_at timestamptz not null default now()
);
create unique index if not exists variants_gtin on ${REFERENCE_SCHEMA}.variants (organization_id, livemode, passport_id, gtin);
create table if not exists ${REFERENCE_SCHEMA}.events (
  organization_id text not null,
  livemode boolean not null,
  seq bigint not null,
  id text not null,
  type text not null,
  related jsonb not null,
  created_at timestamptz not null default now(),
  primary key (organization_id, livemode, seq)
);
`;
