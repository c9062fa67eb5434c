import type { Kysely, Migration } from "kysely";
import { sql } from "kysely";

/**
 * Each event's public JSON, stored with it (`public_json`): the feed answers it as it is instead of building it
 * from the columns on every read. The service renders it when it appends (src/domain/event-json.ts); the
 * functions below render the same text in SQL from the stored columns, for the rows stored before and for a
 * previous version of the service still appending during a rolling update (it does not write the column: a
 * trigger fills it). docs/decisions/0026-event-json-rendered-once.md.
 *
 * The functions are created in the schema the migration runs in (the first of its search_path); the trigger's
 * function keeps that search_path, whatever the inserting session's.
 */
export const RENDER_FUNCTIONS = sql`
  -- A JSON number as JavaScript writes the double it reads as (JSON.stringify(JSON.parse(t))).
  create function event_json_number(t text) returns text
  language plpgsql immutable strict set extra_float_digits = 1 as $fn$
  declare
    x float8;
    m text[];
    digits text;
    k int;
    n int;
  begin
    -- Beyond a double's range JavaScript reads ±Infinity (written null) or 0, where float8 refuses the text.
    if abs(t::numeric) > 1e308 or (t::numeric <> 0 and abs(t::numeric) < 1e-307) then
      begin
        x := t::float8;
      exception when numeric_value_out_of_range then
        return case when abs(t::numeric) > 1 then 'null' else '0' end;
      end;
    else
      x := t::float8;
    end if;
    if x = 0 then
      return '0';
    end if;
    -- float8's text is its shortest round-trip digits, as JavaScript's; only the layout differs.
    m := regexp_match(x::text, '^(-?)([0-9]+)(?:\\.([0-9]+))?(?:e([-+][0-9]+))?$');
    digits := m[2] || coalesce(m[3], '');
    -- the value is 0.<digits> × 10^n
    n := length(m[2]) + coalesce(m[4]::int, 0) - (length(digits) - length(ltrim(digits, '0')));
    digits := rtrim(ltrim(digits, '0'), '0');
    k := length(digits);
    return m[1] || case
      when k <= n and n <= 21 then digits || repeat('0', n - k)
      when 0 < n and n <= 21 then substr(digits, 1, n) || '.' || substr(digits, n + 1)
      when -6 < n and n <= 0 then '0.' || repeat('0', -n) || digits
      else substr(digits, 1, 1) || case when k > 1 then '.' || substr(digits, 2) else '' end
        || 'e' || case when n - 1 >= 0 then '+' else '-' end || abs(n - 1)::text
    end;
  end
  $fn$;

  -- A jsonb value as JSON.stringify writes it once JSON.parse read jsonb's text: object keys that are array
  -- indices first (ascending), then the others in jsonb's order; strings escaped alike. Scalars are rendered
  -- in place, without a call: a call per value would cost more than the rest of the rendering.
  create function event_json_value(v jsonb) returns text
  language plpgsql immutable strict as $fn$
  begin
    case jsonb_typeof(v)
      when 'object' then
        return '{' || coalesce((
          select string_agg(to_jsonb(o.key)::text || ':' || case
                              when jsonb_typeof(o.value) in ('object', 'array', 'number') then event_json_value(o.value)
                              else o.value::text end, ','
                            order by case when ascii(o.key) between 48 and 57
                                           and o.key ~ '^(0|[1-9][0-9]{0,9})$' and o.key::bigint < 4294967295
                                          then o.key::bigint end nulls last,
                                     o.n)
          from jsonb_each(v) with ordinality as o(key, value, n)), '') || '}';
      when 'array' then
        return '[' || coalesce((
          select string_agg(case
                              when jsonb_typeof(a.value) in ('object', 'array', 'number') then event_json_value(a.value)
                              else a.value::text end, ','
                            order by a.n)
          from jsonb_array_elements(v) with ordinality as a(value, n)), '') || ']';
      when 'number' then
        -- An integer of at most 15 digits is written alike (jsonb never writes leading zeros).
        if v::text ~ '^-?[0-9]{1,15}$' then
          return v::text;
        end if;
        return event_json_number(v::text);
      else
        return v::text; -- string, true, false, null
    end case;
  end
  $fn$;

  -- A timestamptz as Date.prototype.toISOString writes its milliseconds (truncated, as node-postgres reads
  -- them): years 0 to 9999 in four digits, others signed in six; Postgres counts 1 BC as -1, JavaScript as 0.
  create function event_json_timestamp(t timestamptz) returns text
  language sql stable strict as $fn$
    select case
      when t >= '0001-01-01T00:00:00Z' and t < '10000-01-01T00:00:00Z'
        then to_char(t at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
      else (select case when y between 0 and 9999 then lpad(y::text, 4, '0')
                        when y < 0 then '-' || lpad((-y)::text, 6, '0')
                        else '+' || lpad(y::text, 6, '0') end
                   || to_char(t at time zone 'UTC', '-MM-DD"T"HH24:MI:SS.MS"Z"')
            from (select extract(year from t at time zone 'UTC')::int as py) a,
                 lateral (select case when a.py < 0 then a.py + 1 else a.py end as y) b)
    end
  $fn$;

  -- The public JSON of an event from its columns: the text src/domain/event-json.ts renders.
  create function event_public_json(event_id text, organization_id text, type text, livemode boolean,
                                    created_at timestamptz, related jsonb) returns text
  language sql stable strict as $fn$
    select '{"object":"event","id":' || to_jsonb(event_id)::text
      || ',"name":' || to_jsonb('organizations/' || organization_id || '/events/' || event_id)::text
      || ',"organization_id":' || to_jsonb(organization_id)::text
      || ',"type":' || to_jsonb(type)::text
      || ',"livemode":' || livemode::text
      || ',"created_at":"' || event_json_timestamp(created_at) || '"'
      || ',"related":' || event_json_value(related) || '}'
  $fn$;
`;

export const publicJson: Migration = {
  async up(db: Kysely<any>) {
    await sql`alter table event add column public_json text`.execute(db);
    await RENDER_FUNCTIONS.execute(db);
    await sql`
      create function event_public_json_fill() returns trigger
      language plpgsql set search_path from current as $fn$
      begin
        new.public_json := event_public_json(new.event_id, new.organization_id, new.type, new.livemode,
                                             new.created_at, new.related);
        return new;
      end
      $fn$;
      create trigger event_public_json_fill before insert on event
        for each row when (new.public_json is null) execute function event_public_json_fill();
      update event
        set public_json = event_public_json(event_id, organization_id, type, livemode, created_at, related);
      alter table event alter column public_json set not null;
    `.execute(db);
  },
  async down(db: Kysely<any>) {
    await sql`
      drop trigger event_public_json_fill on event;
      drop function event_public_json_fill();
      drop function event_public_json(text, text, text, boolean, timestamptz, jsonb);
      drop function event_json_timestamp(timestamptz);
      drop function event_json_value(jsonb);
      drop function event_json_number(text);
      alter table event drop column public_json;
    `.execute(db);
  },
};
