import { sql, type Kysely } from "kysely";

/**
 * Publish slots used per tenant, kept by a trigger as passports enter and leave the statuses that hold a slot
 * (published, deactivated, readonly: PUBLISH_SLOT_STATUSES, written out here as they were when this migration
 * was made; a change to that list needs a migration that replaces the trigger's conditions). A publish takes
 * its slot with its own update (which locks the tenant's row) and reads the number after it, instead of counting
 * the tenant's published passports, which took time in proportion to them
 * (docs/decisions/0038-publish-slots-counted-by-a-trigger.md).
 *
 * The passport table is locked against writes while the trigger is created and the counts are taken, so no
 * status change of a running service falls between the two.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`lock table passport in share row exclusive mode`.execute(db);
  await sql`
    create table publish_slot_usage (
      organization_id text not null,
      livemode boolean not null,
      used integer not null check (used >= 0),
      primary key (organization_id, livemode)
    )`.execute(db);
  // The function names its table with the schema it is created in, so it neither depends on search_path nor
  // needs dynamic SQL (its statement's plan is kept per connection).
  await sql`
    do $do$ begin
      execute format($create$
        create function publish_slot_usage_count() returns trigger language plpgsql as $fn$
        declare
          org text;
          mode boolean;
          delta integer;
        begin
          if tg_op = 'DELETE' then
            org := old.organization_id; mode := old.livemode; delta := -1;
          elsif tg_op = 'INSERT' then
            org := new.organization_id; mode := new.livemode; delta := 1;
          else
            org := new.organization_id; mode := new.livemode;
            delta := case when new.status in ('published', 'deactivated', 'readonly') then 1 else -1 end;
          end if;
          -- An update first: the row exists but for a tenant's first slot, and a waiting update is cheaper than
          -- an upsert's speculative insert. A decrement never inserts (a proposed row of -1 fails the check).
          update %1$I.publish_slot_usage set used = used + delta where organization_id = org and livemode = mode;
          if not found and delta > 0 then
            insert into %1$I.publish_slot_usage as u (organization_id, livemode, used) values (org, mode, 1)
            on conflict (organization_id, livemode) do update set used = u.used + 1;
          end if;
          return null;
        end
        $fn$ $create$, current_schema());
    end $do$`.execute(db);
  // Only rows that change slots fire it: a draft's insert or a PATCH that keeps the status costs nothing.
  await sql`
    create trigger publish_slot_usage_insert after insert on passport for each row
    when (new.status in ('published', 'deactivated', 'readonly'))
    execute function publish_slot_usage_count()`.execute(db);
  await sql`
    create trigger publish_slot_usage_update after update of status on passport for each row
    when ((old.status in ('published', 'deactivated', 'readonly'))
      is distinct from (new.status in ('published', 'deactivated', 'readonly')))
    execute function publish_slot_usage_count()`.execute(db);
  await sql`
    create trigger publish_slot_usage_delete after delete on passport for each row
    when (old.status in ('published', 'deactivated', 'readonly'))
    execute function publish_slot_usage_count()`.execute(db);
  await sql`
    insert into publish_slot_usage (organization_id, livemode, used)
    select organization_id, livemode, count(*)::int from passport
    where status in ('published', 'deactivated', 'readonly')
    group by organization_id, livemode`.execute(db);
  await sql`analyze publish_slot_usage`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop trigger publish_slot_usage_delete on passport`.execute(db);
  await sql`drop trigger publish_slot_usage_update on passport`.execute(db);
  await sql`drop trigger publish_slot_usage_insert on passport`.execute(db);
  await sql`drop function publish_slot_usage_count()`.execute(db);
  await sql`drop table publish_slot_usage`.execute(db);
}
