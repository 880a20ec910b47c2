-- Revert conductor:functions/schedules from pg: back to its v0.2.0 bodies
--
-- Cron schedules that need nothing but the database: any client, pg_cron or
-- every worker at once may call tick(), and each due time still fires once.
--
--   conductor.create_schedule(name, cron, kind, payload, queue, timezone, ...) -> schedules row
--   conductor.update_schedule(name, ...)          change what is given
--   conductor.enable_schedule(name, enabled)      on/off
--   conductor.delete_schedule(name) -> boolean
--   conductor.list_schedules()                    every schedule, by name, with last_fired_at
--   conductor.tick(grace) -> (schedule_name, due_at, task_id)   fire what is due
--   conductor.fire_schedule(name) -> bigint       Run now: one task, a manual fire
--   conductor.overdue_schedules(grace) -> (name, next_due_at, overdue)
--   conductor._check_schedule(row)                raises unless a schedule is valid
--
-- Validation: a schedule's task is checked by the rules of enqueue
-- (conductor._spec_problem, same SQLSTATEs) when it is created or changed, so
-- a schedule tick() could never fire is refused up front.
--
-- A fire's task: the schedule's kind, payload, queue and priority (stored NOT
-- NULL, 'default' and 0 unless given); its max_attempts, dedupe_key and
-- concurrency_key when set. What the schedule leaves NULL (max_attempts,
-- concurrency_key), and max_recoveries and timeout, which it does not store,
-- are resolved by conductor._enqueue as enqueue resolves them: the kind's
-- (configure_kind), else the engine's. (A schedule taking its kind's queue
-- would need schedules.queue nullable: a schema change, not made here.)
--
-- Who may change what: workers declare schedules from code (create_schedule
-- with replace => true at start); operators create, change, disable and delete
-- them as conductor_admin. A schedule records who declared it (declared_by:
-- 'code' or 'admin') and the role that last changed it (changed_by). A caller
-- without conductor_admin may create a schedule and replace one code declared,
-- but not change one an admin created or changed (QC207, nothing changes);
-- re-declaring it unchanged is no change, and answers the row.
--
-- Exactly once: tick locks each due schedule FOR UPDATE SKIP LOCKED (a second
-- tick skips it, and re-checks next_due_at on the row's latest version), and
-- every fire is a row of conductor.schedule_fires under the unique index
-- schedule_fires_due (schedule_name, due_at) where not manual, inserted in the
-- same transaction as its task. A tick that loses the race inserts nothing and
-- enqueues nothing.
--
-- Manual fires (fire_schedule, an operator's Run now): a fire row with manual
-- = true and due_at = when it was asked, outside that unique index, so it
-- never takes a due time's place: a due time at the same instant still fires
-- once. next_due_at, last_due_at and last_task_id are the cron line's and stay
-- as they are; list_schedules' last_fired_at shows either kind of fire
-- (through the index schedule_fires_fired, which this change owns).
--
-- Overdue: an enabled schedule whose next_due_at passed more than a grace ago
-- means no tick ran (no scheduler holds its lock): overdue_schedules() names
-- them for health checks and metrics.
--
-- Isolation: tick fires each due schedule in a subtransaction of its own. One
-- that raises (a row made bad by hand, or stored by v0.1.0, which checked
-- less) is rolled back, its error recorded on the row (last_error,
-- last_error_at), and the others still fire; it is tried again at the next
-- tick. (Each subtransaction that fires takes a subtransaction id: a tick
-- firing more than 64 schedules at once overflows the backend's subxid cache
-- for the rest of its transaction, which is short.)
--
-- Lock order: schedule rows in name order, then the fires and the new tasks.

begin;
set local role conductor_owner;

-- added after v0.2.0: create_schedule's concurrency_limit, expires_in and rate_key (issue 30);
-- v0.2.0's comes back below
drop function conductor.create_schedule(text, text, text, jsonb, text, text, integer, integer, text, text, text, integer,
                                        boolean, boolean, integer, interval, text);

-- The latest fire of a schedule (list_schedules' last_fired_at) without reading
-- every fire it made; written once per fire, never on the hot path.

-- v0.1.0's _check_schedule took eight fields; it now takes the whole row.

create or replace function conductor._check_schedule(s conductor.schedules) returns void
  language plpgsql stable
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_spec conductor._task_spec := row(
    s.kind, s.payload, s.queue, s.priority, null, s.max_attempts, s.dedupe_key, s.concurrency_key,
    null, null, null, null, null, null);
  v_problem text;
begin
  if s.name is null or s.name !~ '^[A-Za-z0-9][A-Za-z0-9_.:/-]{0,199}$' then
    raise exception 'invalid schedule name %: 1-200 letters, digits and _ . : / -, starting with a letter or digit',
      conductor._echo(s.name)
      using errcode = 'QC106';
  end if;
  -- long lines and zones are refused before cron_next, whose messages echo them whole
  if pg_catalog.octet_length(s.cron) > 1000 then
    raise exception 'invalid cron expression %: at most 1000 bytes', conductor._echo(s.cron)
      using errcode = 'QC301';
  end if;
  if pg_catalog.length(s.timezone) > 100 then
    raise exception 'invalid timezone %: at most 100 characters', conductor._echo(s.timezone)
      using errcode = 'QC302', hint = 'Use an IANA name from pg_timezone_names, e.g. Europe/Berlin or UTC.';
  end if;
  -- raises QC301 naming the bad field, or QC302 for an unknown time zone
  perform conductor.cron_next(s.cron, conductor.now(), s.timezone);
  v_problem := conductor._spec_problem(v_spec);
  if v_problem is not null then
    perform conductor._raise_spec_problem(v_problem, v_spec, pg_catalog.format('schedule %s', conductor._echo(s.name)));
  end if;
  if s.catch_up is null or s.catch_up not in ('once', 'all') then
    raise exception 'invalid catch_up %: ''once'' or ''all''', conductor._echo(s.catch_up)
      using errcode = 'QC106';
  end if;
  if s.catch_up_limit is null or s.catch_up_limit not between 1 and 10000 then
    raise exception 'invalid catch_up_limit %: between 1 and 10000', coalesce(s.catch_up_limit::text, 'NULL')
      using errcode = 'QC106';
  end if;
end
$$;

comment on function conductor._check_schedule(conductor.schedules) is
$$Raises unless s is a valid schedule: QC106 name (1-200 of A-Z a-z 0-9 _ . : / -), QC301
cron line (at most 1000 bytes), QC302 time zone (at most 100 characters), the task by
enqueue's rules (conductor._spec_problem: QC101 kind, QC102 payload, QC103 payload size,
QC104 queue, QC106 max_attempts or keys), QC106 catch_up and catch_up_limit.$$;

revoke execute on function conductor._check_schedule(conductor.schedules) from public;

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
  v_caller text := conductor._caller();
  v_admin boolean := conductor._caller_is_admin();
  v_new conductor.schedules;
  v_old conductor.schedules;
  v_row conductor.schedules;
begin
  v_new.name := create_schedule.name;
  v_new.cron := create_schedule.cron;
  v_new.timezone := create_schedule.timezone;
  v_new.kind := create_schedule.kind;
  v_new.payload := create_schedule.payload;
  v_new.queue := create_schedule.queue;
  v_new.priority := coalesce(create_schedule.priority, 0);
  v_new.max_attempts := create_schedule.max_attempts;
  v_new.dedupe_key := create_schedule.dedupe_key;
  v_new.concurrency_key := create_schedule.concurrency_key;
  v_new.catch_up := create_schedule.catch_up;
  v_new.catch_up_limit := create_schedule.catch_up_limit;
  perform conductor._check_schedule(v_new);

  select s.* into v_old from conductor.schedules s where s.name = create_schedule.name for update;
  if not found then
    insert into conductor.schedules as s
           (name, cron, timezone, kind, payload, queue, priority, max_attempts, dedupe_key,
            concurrency_key, catch_up, catch_up_limit, enabled, next_due_at, created_at, updated_at,
            declared_by, changed_by)
    values (v_new.name, v_new.cron, v_new.timezone, v_new.kind, v_new.payload, v_new.queue, v_new.priority,
            v_new.max_attempts, v_new.dedupe_key, v_new.concurrency_key, v_new.catch_up, v_new.catch_up_limit,
            coalesce(create_schedule.enabled, true), conductor.cron_next(v_new.cron, v_now, v_new.timezone),
            v_now, v_now, case when v_admin then 'admin' else 'code' end, v_caller)
    on conflict on constraint schedules_pkey do nothing
    returning s.* into v_row;
    if found then
      return v_row;
    end if;
    -- another caller created it since our select (workers starting together declare the
    -- same schedules): the insert waited for its commit, and this new statement sees the
    -- row, so go on as if it had been there (equal, replace, QC206 or QC207 below)
    select s.* into strict v_old from conductor.schedules s where s.name = create_schedule.name for update;
  end if;

  if not coalesce(create_schedule.replace, false) then
    raise exception 'schedule % already exists', conductor._echo(create_schedule.name)
      using errcode = 'QC206', hint = 'Pass replace => true to update it, or use update_schedule.';
  end if;

  v_new.enabled := coalesce(create_schedule.enabled, v_old.enabled);
  if (v_old.cron, v_old.timezone, v_old.kind, v_old.payload, v_old.queue, v_old.priority, v_old.max_attempts,
      v_old.dedupe_key, v_old.concurrency_key, v_old.catch_up, v_old.catch_up_limit, v_old.enabled)
     is not distinct from
     (v_new.cron, v_new.timezone, v_new.kind, v_new.payload, v_new.queue, v_new.priority, v_new.max_attempts,
      v_new.dedupe_key, v_new.concurrency_key, v_new.catch_up, v_new.catch_up_limit, v_new.enabled) then
    -- a worker restarting re-declares what is there: nothing to change, nothing written
    return v_old;
  end if;

  if v_old.declared_by = 'admin' and not v_admin then
    raise exception 'schedule % was created or changed by an operator; role % may not change it',
      conductor._echo(v_old.name), conductor._echo(v_caller)
      using errcode = 'QC207',
            detail = pg_catalog.format('It was last changed by %s. Only a member of conductor_admin may change '
                                       'or disable it; re-declaring it unchanged is allowed.',
                                       coalesce(v_old.changed_by, 'a v0.1.0 caller')),
            hint = 'Ask an operator to make the change with update_schedule, or to delete the schedule so that code may declare it again.';
  end if;

  update conductor.schedules s
     set cron = v_new.cron, timezone = v_new.timezone, kind = v_new.kind, payload = v_new.payload,
         queue = v_new.queue, priority = v_new.priority, max_attempts = v_new.max_attempts,
         dedupe_key = v_new.dedupe_key, concurrency_key = v_new.concurrency_key,
         catch_up = v_new.catch_up, catch_up_limit = v_new.catch_up_limit, enabled = v_new.enabled,
         -- a changed line or zone, or switching it on, starts from now; else it keeps its place
         next_due_at = case
           when (s.cron, s.timezone) is distinct from (v_new.cron, v_new.timezone)
                or (not s.enabled and v_new.enabled)
           then conductor.cron_next(v_new.cron, greatest(v_now, s.last_due_at), v_new.timezone)
           else s.next_due_at end,
         updated_at = v_now,
         declared_by = case when v_admin then 'admin' else s.declared_by end,
         changed_by = v_caller,
         last_error = null,
         last_error_at = null
   where s.name = v_old.name
  returning s.* into v_row;
  return v_row;
end
$$;

comment on function conductor.create_schedule(text, text, text, jsonb, text, text, integer, integer, text, text, text, integer, boolean, boolean) is
$$Creates a schedule that enqueues kind with payload on queue at every due time of the
cron line (5 fields, or 6 with seconds first; evaluated in timezone, default UTC), with
the task options priority, max_attempts, dedupe_key and concurrency_key, checked by the
rules of enqueue. queue ('default') and priority (0) are stored as given; max_attempts
and concurrency_key left NULL, and the task's max_recoveries and timeout, are the kind's
when it fires (configure_kind), else enqueue's defaults. Returns the row, next_due_at included. catch_up 'once' (default): after
downtime the schedule fires once for the missed stretch, then continues; 'all' replays
every missed due time, at most catch_up_limit (100). enabled: NULL means true for a new
schedule and unchanged for a replaced one. replace => true updates an existing schedule
of that name (used by workers declaring schedules in code), keeping its place unless the
line or zone changed, and keeping it off if an operator disabled it; a declaration equal
to the stored schedule writes nothing and answers the row. Safe to call from many sessions
at once: a name another caller created meanwhile is treated as existing (workers starting
together declare the same schedules).
Who: the row records declared_by ('admin' when the caller is a member of conductor_admin,
else 'code') and changed_by (the caller's role). A caller without conductor_admin may
replace only a schedule code declared: changing or disabling one an admin created or
changed raises QC207 and changes nothing.
Raises QC301 invalid cron (naming the field), QC302 unknown time zone, QC101 kind,
QC102 payload, QC103 payload size, QC104 queue, QC106 name or options, QC206 when it
exists and not replace, QC207 as above.$$;

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
    raise exception 'schedule % does not exist', conductor._echo(update_schedule.name)
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
schedule, restarts it from now (missed due times are not fired). A change makes the
schedule the operator's (declared_by 'admin'): workers can no longer replace it. Raises
QC203 when the schedule does not exist, else as create_schedule.$$;

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

-- last_fired_at is appended to the schedules row: the return type changes
-- (the reworked function also returns owner: drop it to restore v0.2.0's return type)

drop function if exists conductor.list_schedules();

create or replace function conductor.list_schedules()
  returns table (
    name            text,
    cron            text,
    timezone        text,
    kind            text,
    payload         jsonb,
    queue           text,
    priority        integer,
    max_attempts    integer,
    dedupe_key      text,
    concurrency_key text,
    catch_up        text,
    catch_up_limit  integer,
    enabled         boolean,
    next_due_at     timestamptz,
    last_due_at     timestamptz,
    last_task_id    bigint,
    created_at      timestamptz,
    updated_at      timestamptz,
    declared_by     text,
    changed_by      text,
    last_error      text,
    last_error_at   timestamptz,
    last_fired_at   timestamptz
  )
  language sql stable
  security definer
  set search_path = pg_catalog, pg_temp
as $$
  select s.name, s.cron, s.timezone, s.kind, s.payload, s.queue, s.priority, s.max_attempts,
         s.dedupe_key, s.concurrency_key, s.catch_up, s.catch_up_limit, s.enabled, s.next_due_at,
         s.last_due_at, s.last_task_id, s.created_at, s.updated_at, s.declared_by, s.changed_by,
         s.last_error, s.last_error_at,
         (select pg_catalog.max(f.fired_at) from conductor.schedule_fires f where f.schedule_name = s.name)
    from conductor.schedules s
   order by s.name
$$;

comment on function conductor.list_schedules() is
$$Every schedule by name: the columns of conductor.schedules, with next_due_at (the next
time it fires), last_due_at / last_task_id (its last fire by its cron line), last_error /
last_error_at (why and when tick last failed to fire it; NULL once it fires again),
declared_by ('code' or 'admin') and changed_by (the role that last changed it); then
last_fired_at: when it last fired, by tick or by fire_schedule (NULL: never, or its fires
were deleted with their tasks).$$;

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
  v_dues timestamptz[];
  v_tasks bigint[];
  v_state text;
  v_message text;
begin
  if tick.grace is null or tick.grace not between interval '0' and interval '30 days' then
    raise exception 'invalid grace %: between 0 and 30 days', coalesce(tick.grace::text, 'NULL')
      using errcode = 'QC106';
  end if;

  for v_s in
    select s.* from conductor.schedules s
     where s.enabled and s.next_due_at <= v_now
     order by s.name
       for update skip locked
  loop
    -- One subtransaction per schedule. What it fired is answered only once the
    -- block ended well, so a schedule that raises half way answers nothing.
    v_dues := '{}';
    v_tasks := '{}';
    begin
      v_due := v_s.next_due_at;
      v_fired := 0;
      v_last_due := v_s.last_due_at;
      v_last_task := v_s.last_task_id;
      while v_due <= v_now and v_fired < v_s.catch_up_limit loop
        -- one fire per due time: the unique index schedule_fires_due, the table's only
        -- unique key (manual fires are outside it). No conflict target: its columns
        -- would read as this function's output column schedule_name (42702).
        insert into conductor.schedule_fires as f (schedule_name, due_at, fired_at)
        values (v_s.name, v_due, v_now)
        on conflict do nothing;
        if found then
          v_task := (conductor._enqueue(array[row(
                       v_s.kind, v_s.payload, v_s.queue, v_s.priority, v_now, v_s.max_attempts,
                       v_s.dedupe_key, v_s.concurrency_key, null, null, null, null, null, null
                     )::conductor._task_spec]))[1];
          update conductor.schedule_fires f set task_id = v_task
           where f.schedule_name = v_s.name and f.due_at = v_due and not f.manual;
          v_dues := v_dues || v_due;
          v_tasks := v_tasks || v_task;
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
         set next_due_at = v_due, last_due_at = v_last_due, last_task_id = v_last_task,
             last_error = null, last_error_at = null
       where s.name = v_s.name;
    exception when others then
      -- back to the start of this schedule: it keeps its due time, and the others still fire
      get stacked diagnostics v_state = returned_sqlstate, v_message = message_text;
      v_dues := '{}';
      v_tasks := '{}';
      update conductor.schedules s
         set last_error = pg_catalog."left"(v_state || ': ' || v_message, 1000), last_error_at = v_now
       where s.name = v_s.name;
    end;

    for v_i in 1 .. pg_catalog.cardinality(v_dues) loop
      schedule_name := v_s.name;
      due_at := v_dues[v_i];
      task_id := v_tasks[v_i];
      return next;
    end loop;
  end loop;
end
$$;

comment on function conductor.tick(interval) is
$$Fires every enabled schedule that is due: for each due time, one conductor.schedule_fires
row and one task, in this transaction; returns what it fired (schedule_name, due_at,
task_id). The task has the schedule's kind, payload, queue and priority, and its
max_attempts, dedupe_key and concurrency_key when set; the rest (and max_recoveries and
timeout) are the kind's (configure_kind), else enqueue's defaults. A due time missed by at most grace (1 minute) still fires; after a longer gap a
'once' schedule fires once for the stretch (at its earliest missed due time), then goes
on from grace ago; an 'all' schedule replays each missed due time, at most catch_up_limit,
and skips the rest. Safe to call from any number of processes at once (SKIP LOCKED and the
fires' unique key): each due time fires exactly once, whatever manual fires (fire_schedule)
happened at the same instant. Each schedule fires in a
subtransaction of its own: one that raises is skipped, its error stored in last_error /
last_error_at (cleared by its next good fire), and tried again at the next tick; the
others still fire. grace: 0 to 30 days, else QC106. Call it from a worker, from pg_cron
or from psql.$$;

create or replace function conductor.fire_schedule(name text) returns bigint
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_now timestamptz := conductor.now();
  v_s conductor.schedules;
  v_task bigint;
begin
  -- held against delete_schedule; a tick at this instant skips the row until its next call
  select s.* into v_s from conductor.schedules s where s.name = fire_schedule.name for key share;
  if not found then
    raise exception 'schedule % does not exist', conductor._echo(fire_schedule.name)
      using errcode = 'QC203';
  end if;

  -- the task tick would enqueue
  v_task := (conductor._enqueue(array[row(
               v_s.kind, v_s.payload, v_s.queue, v_s.priority, v_now, v_s.max_attempts,
               v_s.dedupe_key, v_s.concurrency_key, null, null, null, null, null, null
             )::conductor._task_spec]))[1];
  insert into conductor.schedule_fires (schedule_name, due_at, task_id, fired_at, manual)
  values (v_s.name, v_now, v_task, v_now, true);
  return v_task;
end
$$;

comment on function conductor.fire_schedule(text) is
$$Run now: enqueues one task of the schedule name now, the task tick would enqueue (its
kind, payload, queue, priority, max_attempts, dedupe_key, concurrency_key; the rest the
kind's, else enqueue's defaults; with a dedupe_key an unfinished task holding it is
answered instead of a new one), records a manual fire (schedule_fires.manual, due_at =
fired_at = now) and returns the task id. next_due_at, last_due_at and last_task_id are
not touched: the next due time fires as it would have, even one at this very instant.
Works for a disabled schedule too. Raises QC203 when the schedule does not exist, and
enqueue's errors when its stored task cannot be enqueued.$$;

create or replace function conductor.overdue_schedules(grace interval default interval '1 minute')
  returns table (name text, next_due_at timestamptz, overdue interval)
  language plpgsql stable
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_now timestamptz := conductor.now();
begin
  if overdue_schedules.grace is null or overdue_schedules.grace not between interval '0' and interval '30 days' then
    raise exception 'invalid grace %: between 0 and 30 days', coalesce(overdue_schedules.grace::text, 'NULL')
      using errcode = 'QC106';
  end if;
  return query
    select s.name, s.next_due_at, v_now - s.next_due_at
      from conductor.schedules s
     where s.enabled and s.next_due_at < v_now - overdue_schedules.grace
     order by s.next_due_at, s.name;
end
$$;

comment on function conductor.overdue_schedules(interval) is
$$The enabled schedules whose next due time passed more than grace (1 minute) ago, most
overdue first: (name, next_due_at, overdue = now - next_due_at). Any row means no tick
fired them: no scheduler runs, or tick fails (see list_schedules' last_error). Empty when
all is well. Raises QC106 for a grace that is NULL or outside 0 to 30 days.$$;

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
revoke execute on function conductor.fire_schedule(text) from public;
revoke execute on function conductor.overdue_schedules(interval) from public;
grant execute on function conductor.fire_schedule(text) to conductor_admin;
grant execute on function conductor.overdue_schedules(interval)
  to conductor_client, conductor_worker, conductor_admin;

commit;
