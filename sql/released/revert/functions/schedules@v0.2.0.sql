-- Revert conductor:functions/schedules from pg: back to its v0.1.0 body
--
-- The v0.1.0 deploy script (functions/schedules@v0.1.0.sql), with create or replace, and
-- search_path pinned to pg_catalog, pg_temp instead of '': going back to v0.1.0's
-- bodies does not reopen the pg_temp escalation (issue 14).
--
-- Cron schedules that need nothing but the database: any client, pg_cron or
-- every worker at once may call tick(), and each due time still fires once.
--
--   conductor.create_schedule(name, cron, kind, payload, queue, timezone, ...) -> schedules row
--   conductor.update_schedule(name, ...)          change what is given
--   conductor.enable_schedule(name, enabled)      on/off
--   conductor.delete_schedule(name) -> boolean
--   conductor.list_schedules()                    every schedule, by name
--   conductor.tick(grace) -> (schedule_name, due_at, task_id)   fire what is due
--
-- Exactly once: tick locks each due schedule FOR UPDATE SKIP LOCKED (a second
-- tick skips it, and re-checks next_due_at on the row's latest version), and
-- every fire is a row of conductor.schedule_fires under the primary key
-- (schedule_name, due_at), inserted in the same transaction as its task. A
-- tick that loses the race inserts nothing and enqueues nothing.
--
-- Lock order: schedule rows in name order, then the fires and the new tasks.

begin;

-- issue 17: Run now, overdue schedules, and list_schedules' last_fired_at
drop function conductor.fire_schedule(text);
drop function conductor.overdue_schedules(interval);
drop function conductor.list_schedules();
drop index conductor.schedule_fires_fired;

-- the reworked _check_schedule takes the whole row
drop function conductor._check_schedule(conductor.schedules);

create or replace function conductor._check_schedule(
  name text, cron text, timezone text, kind text, payload jsonb, queue text,
  catch_up text, catch_up_limit integer
) returns void
  language plpgsql stable
  set search_path = pg_catalog, pg_temp
as $$
begin
  if _check_schedule.name is null or _check_schedule.name !~ '^[A-Za-z0-9][A-Za-z0-9_.:/-]{0,199}$' then
    raise exception 'invalid schedule name %: 1-200 letters, digits and _ . : / -, starting with a letter or digit',
      coalesce(pg_catalog.quote_literal(_check_schedule.name), 'NULL')
      using errcode = 'QC106';
  end if;
  -- raises QC301 naming the bad field, or QC302 for an unknown time zone
  perform conductor.cron_next(_check_schedule.cron, conductor.now(), _check_schedule.timezone);
  if _check_schedule.kind is null or _check_schedule.kind = '' then
    raise exception 'invalid kind % for schedule %', coalesce(pg_catalog.quote_literal(_check_schedule.kind), 'NULL'),
      pg_catalog.quote_literal(_check_schedule.name)
      using errcode = 'QC101';
  end if;
  if _check_schedule.payload is null or pg_catalog.jsonb_typeof(_check_schedule.payload) <> 'object' then
    raise exception 'invalid payload for schedule %: a payload is a JSON object, got %',
      pg_catalog.quote_literal(_check_schedule.name),
      coalesce(pg_catalog.jsonb_typeof(_check_schedule.payload), 'SQL NULL')
      using errcode = 'QC102';
  end if;
  if _check_schedule.queue is null or _check_schedule.queue !~ '^[A-Za-z0-9][A-Za-z0-9_.:/-]{0,99}$' then
    raise exception 'invalid queue % for schedule %', coalesce(pg_catalog.quote_literal(_check_schedule.queue), 'NULL'),
      pg_catalog.quote_literal(_check_schedule.name)
      using errcode = 'QC104';
  end if;
  if _check_schedule.catch_up is null or _check_schedule.catch_up not in ('once', 'all') then
    raise exception 'invalid catch_up %: ''once'' or ''all''', coalesce(pg_catalog.quote_literal(_check_schedule.catch_up), 'NULL')
      using errcode = 'QC106';
  end if;
  if _check_schedule.catch_up_limit is null or _check_schedule.catch_up_limit not between 1 and 10000 then
    raise exception 'invalid catch_up_limit %: between 1 and 10000', _check_schedule.catch_up_limit
      using errcode = 'QC106';
  end if;
end
$$;

revoke execute on function conductor._check_schedule(text, text, text, text, jsonb, text, text, integer) from public;

create or replace function conductor.create_schedule(
  name            text,
  cron            text,
  kind            text,
  payload         jsonb default '{}',
  queue           text default 'default',
  timezone        text default 'UTC',
  priority        integer default 0,
  max_attempts    integer default null,
  dedupe_key      text default null,
  concurrency_key text default null,
  catch_up        text default 'once',
  catch_up_limit  integer default 100,
  enabled         boolean default null,
  replace         boolean default false
) returns conductor.schedules
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_now timestamptz := conductor.now();
  v_old conductor.schedules;
  v_row conductor.schedules;
begin
  perform conductor._check_schedule(create_schedule.name, create_schedule.cron, create_schedule.timezone,
    create_schedule.kind, create_schedule.payload, create_schedule.queue,
    create_schedule.catch_up, create_schedule.catch_up_limit);
  if create_schedule.max_attempts < 1 then
    raise exception 'invalid max_attempts % for schedule %', create_schedule.max_attempts,
      pg_catalog.quote_literal(create_schedule.name)
      using errcode = 'QC106';
  end if;

  select s.* into v_old from conductor.schedules s where s.name = create_schedule.name for update;
  if found and not create_schedule.replace then
    raise exception 'schedule % already exists', pg_catalog.quote_literal(create_schedule.name)
      using errcode = 'QC206', hint = 'Pass replace => true to update it, or use update_schedule.';
  end if;

  if found then
    update conductor.schedules s
       set cron = create_schedule.cron, timezone = create_schedule.timezone,
           kind = create_schedule.kind, payload = create_schedule.payload,
           queue = create_schedule.queue, priority = coalesce(create_schedule.priority, 0),
           max_attempts = create_schedule.max_attempts, dedupe_key = create_schedule.dedupe_key,
           concurrency_key = create_schedule.concurrency_key, catch_up = create_schedule.catch_up,
           catch_up_limit = create_schedule.catch_up_limit,
           enabled = coalesce(create_schedule.enabled, s.enabled),
           -- a changed line or zone starts from now; an unchanged one keeps its place
           next_due_at = case
             when (s.cron, s.timezone) is distinct from (create_schedule.cron, create_schedule.timezone)
                  or (not s.enabled and coalesce(create_schedule.enabled, false))
             then conductor.cron_next(create_schedule.cron, greatest(v_now, s.last_due_at), create_schedule.timezone)
             else s.next_due_at end,
           updated_at = case
             when (s.cron, s.timezone, s.kind, s.payload, s.queue, s.priority, s.max_attempts,
                   s.dedupe_key, s.concurrency_key, s.catch_up, s.catch_up_limit, s.enabled)
                  is distinct from
                  (create_schedule.cron, create_schedule.timezone, create_schedule.kind,
                   create_schedule.payload, create_schedule.queue, coalesce(create_schedule.priority, 0),
                   create_schedule.max_attempts, create_schedule.dedupe_key,
                   create_schedule.concurrency_key, create_schedule.catch_up,
                   create_schedule.catch_up_limit, coalesce(create_schedule.enabled, s.enabled))
             then v_now else s.updated_at end
     where s.name = create_schedule.name
    returning s.* into v_row;
  else
    insert into conductor.schedules as s
           (name, cron, timezone, kind, payload, queue, priority, max_attempts, dedupe_key,
            concurrency_key, catch_up, catch_up_limit, enabled, next_due_at, created_at, updated_at)
    values (create_schedule.name, create_schedule.cron, create_schedule.timezone, create_schedule.kind,
            create_schedule.payload, create_schedule.queue, coalesce(create_schedule.priority, 0),
            create_schedule.max_attempts, create_schedule.dedupe_key, create_schedule.concurrency_key,
            create_schedule.catch_up, create_schedule.catch_up_limit, coalesce(create_schedule.enabled, true),
            conductor.cron_next(create_schedule.cron, v_now, create_schedule.timezone), v_now, v_now)
    returning s.* into v_row;
  end if;
  return v_row;
end
$$;

comment on function conductor.create_schedule(text, text, text, jsonb, text, text, integer, integer, text, text, text, integer, boolean, boolean) is
$$Creates a schedule that enqueues kind with payload on queue at every due time of the
cron line (5 fields, or 6 with seconds first; evaluated in timezone, default UTC), with
the task options priority, max_attempts, dedupe_key and concurrency_key. Returns the row,
next_due_at included. catch_up 'once' (default): after downtime the schedule fires once
for the missed stretch, then continues; 'all' replays every missed due time, at most
catch_up_limit (100). enabled: NULL means true for a new schedule and unchanged for a
replaced one. replace => true updates an existing schedule of that name (used by workers
declaring schedules in code), keeping its place unless the line or zone changed, and
keeping it off if an operator disabled it.
Raises QC301 invalid cron (naming the field), QC302 unknown time zone, QC101 kind,
QC102 payload, QC104 queue, QC106 name or options, QC206 when it exists and not replace.$$;

create or replace function conductor.update_schedule(
  name            text,
  cron            text default null,
  kind            text default null,
  payload         jsonb default null,
  queue           text default null,
  timezone        text default null,
  priority        integer default null,
  max_attempts    integer default null,
  catch_up        text default null,
  enabled         boolean default null
) returns conductor.schedules
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_s conductor.schedules;
begin
  select s.* into v_s from conductor.schedules s where s.name = update_schedule.name for update;
  if not found then
    raise exception 'schedule % does not exist', coalesce(pg_catalog.quote_literal(update_schedule.name), 'NULL')
      using errcode = 'QC203';
  end if;
  return conductor.create_schedule(
    name => v_s.name,
    cron => coalesce(update_schedule.cron, v_s.cron),
    kind => coalesce(update_schedule.kind, v_s.kind),
    payload => coalesce(update_schedule.payload, v_s.payload),
    queue => coalesce(update_schedule.queue, v_s.queue),
    timezone => coalesce(update_schedule.timezone, v_s.timezone),
    priority => coalesce(update_schedule.priority, v_s.priority),
    max_attempts => coalesce(update_schedule.max_attempts, v_s.max_attempts),
    dedupe_key => v_s.dedupe_key,
    concurrency_key => v_s.concurrency_key,
    catch_up => coalesce(update_schedule.catch_up, v_s.catch_up),
    catch_up_limit => v_s.catch_up_limit,
    enabled => coalesce(update_schedule.enabled, v_s.enabled),
    replace => true);
end
$$;

comment on function conductor.update_schedule(text, text, text, jsonb, text, text, integer, integer, text, boolean) is
$$Changes the given fields of a schedule (NULL: unchanged) and returns the row; validates
as create_schedule does. A changed cron line or time zone, or enabling a disabled
schedule, restarts it from now (missed due times are not fired). Raises QC203 when the
schedule does not exist, else as create_schedule.$$;

create or replace function conductor.enable_schedule(name text, enabled boolean default true) returns conductor.schedules
  language sql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
  select * from conductor.update_schedule(name => enable_schedule.name, enabled => enable_schedule.enabled)
$$;

comment on function conductor.enable_schedule(text, boolean) is
$$Turns a schedule on (enabled => true, the default) or off. Enabling starts from now:
due times passed while it was off are not fired. Raises QC203 when it does not exist.$$;

create or replace function conductor.delete_schedule(name text) returns boolean
  language sql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
  with gone as (
    delete from conductor.schedules s where s.name = delete_schedule.name returning s.name
  )
  select exists (select from gone)
$$;

comment on function conductor.delete_schedule(text) is
$$Deletes a schedule and its fire history; returns whether it existed. Tasks it already
enqueued are not touched.$$;

create or replace function conductor.list_schedules() returns setof conductor.schedules
  language sql stable
  security definer
  set search_path = pg_catalog, pg_temp
as $$
  select * from conductor.schedules order by name
$$;

comment on function conductor.list_schedules() is
$$Every schedule by name, with next_due_at (the next time it fires) and last_due_at /
last_task_id (its last fire).$$;

create or replace function conductor.tick(grace interval default interval '1 minute')
  returns table (schedule_name text, due_at timestamptz, task_id bigint)
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_now timestamptz := conductor.now();
  v_s conductor.schedules;
  v_due timestamptz;
  v_fired integer;
  v_task bigint;
  v_last_due timestamptz;
  v_last_task bigint;
begin
  if tick.grace is null or tick.grace < interval '0' then
    raise exception 'invalid grace %: it must be 0 or more', tick.grace using errcode = 'QC106';
  end if;

  for v_s in
    select s.* from conductor.schedules s
     where s.enabled and s.next_due_at <= v_now
     order by s.name
       for update skip locked
  loop
    v_due := v_s.next_due_at;
    v_fired := 0;
    v_last_due := v_s.last_due_at;
    v_last_task := v_s.last_task_id;
    while v_due <= v_now and v_fired < v_s.catch_up_limit loop
      insert into conductor.schedule_fires as f (schedule_name, due_at, fired_at)
      values (v_s.name, v_due, v_now)
      on conflict do nothing;
      if found then
        v_task := (conductor._enqueue(array[row(
                     v_s.kind, v_s.payload, v_s.queue, v_s.priority, v_now, v_s.max_attempts,
                     v_s.dedupe_key, v_s.concurrency_key, null, null, null, null, null
                   )::conductor._task_spec]))[1];
        update conductor.schedule_fires f set task_id = v_task
         where f.schedule_name = v_s.name and f.due_at = v_due;
        schedule_name := v_s.name;
        due_at := v_due;
        task_id := v_task;
        return next;
        v_fired := v_fired + 1;
        v_last_due := v_due;
        v_last_task := v_task;
      end if;
      -- 'once' jumps over a stretch missed by more than grace; 'all' walks it
      if v_s.catch_up = 'once' then
        v_due := conductor.cron_next(v_s.cron, greatest(v_due, v_now - tick.grace), v_s.timezone);
      else
        v_due := conductor.cron_next(v_s.cron, v_due, v_s.timezone);
      end if;
    end loop;
    if v_due <= v_now then
      -- over catch_up_limit: the rest of the stretch is skipped
      v_due := conductor.cron_next(v_s.cron, v_now, v_s.timezone);
    end if;

    update conductor.schedules s
       set next_due_at = v_due, last_due_at = v_last_due, last_task_id = v_last_task
     where s.name = v_s.name;
  end loop;
end
$$;

comment on function conductor.tick(interval) is
$$Fires every enabled schedule that is due: for each due time, one conductor.schedule_fires
row and one task, in this transaction; returns what it fired (schedule_name, due_at,
task_id). A due time missed by at most grace (1 minute) still fires; after a longer gap a
'once' schedule fires once for the stretch (at its earliest missed due time), then goes
on from grace ago; an 'all' schedule replays each missed due time, at most catch_up_limit,
and skips the rest. Safe to call from any number of processes at once (SKIP LOCKED and the
fires' unique key): each due time fires exactly once. Call it from a worker, from pg_cron
or from psql.$$;

revoke execute on function conductor.create_schedule(text, text, text, jsonb, text, text, integer, integer, text, text, text, integer, boolean, boolean) from public;
revoke execute on function conductor.update_schedule(text, text, text, jsonb, text, text, integer, integer, text, boolean) from public;
revoke execute on function conductor.enable_schedule(text, boolean) from public;
revoke execute on function conductor.delete_schedule(text) from public;
revoke execute on function conductor.list_schedules() from public;
revoke execute on function conductor.tick(interval) from public;
grant execute on function conductor.create_schedule(text, text, text, jsonb, text, text, integer, integer, text, text, text, integer, boolean, boolean) to conductor_worker, conductor_admin;
grant execute on function conductor.update_schedule(text, text, text, jsonb, text, text, integer, integer, text, boolean) to conductor_admin;
grant execute on function conductor.enable_schedule(text, boolean) to conductor_admin;
grant execute on function conductor.delete_schedule(text) to conductor_admin;
grant execute on function conductor.list_schedules() to conductor_client, conductor_worker, conductor_admin;
grant execute on function conductor.tick(interval) to conductor_worker, conductor_admin;

commit;
