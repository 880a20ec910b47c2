-- Deploy conductor:functions/runs to pg
-- (reworked after v0.2.0; the released body is sql/released/functions/runs@v0.2.0.sql)
--
-- Durable runs: a task checkpoints its steps, spawns children, and suspends
-- (freeing its worker slot) until its children finish, an event arrives or a
-- time passes; woken, it is queued again and its handler runs from the top,
-- skipping the steps already checkpointed (claim returns them).
--
--   conductor.save_step(attempt_id, name, result) -> jsonb     checkpoint a step
--   conductor.spawn(attempt_id, step, kind, payload, ...) -> bigint   a child, once
--                                     (options not given: the child's kind's, as enqueue)
--   conductor.suspend(attempt_id, step, wait_for, event, duration, timeout)
--                                     -> (state, result)       wait, or go on
--   conductor.emit_event(name, payload) -> integer             wake the waiters
--                                     (payload: a JSON object, as enqueue's; prune() removes old events)
--   conductor.children(task_id)                                a task's children
--   conductor._wake_event_waiters(name) -> integer             THE wake-up of an event's
--                                     waiters: emit_event's, and the reaper's (functions/reap)
--
-- Checkpoint names are the caller's: a driver numbers a name used twice in one
-- run ('charge', 'charge#2') by counting as the handler runs, so a replay asks
-- for the same names in the same order.
--
-- A wake-up and its checkpoint are written in one transaction: an event's
-- payload, a wait's timeout, or the children's outcomes become the result of
-- the wait's step, so a resumed run sees the same outcome every time.
--
-- Events, with no lock anyone can hold.
-- suspend locks its own task row (and so has a transaction id) before it
-- reads conductor.events; emit_event inserts a new event as pending, then wakes
-- the waiters it sees. A suspend and an emit of the same event that overlap may
-- miss each other: the suspend read before the emit committed, the emit looked
-- for waiters before the suspend committed. The reaper closes that gap (reap,
-- step 2): each pass wakes the waiters of every pending event, exactly as
-- emit_event does (_wake_event_waiters). Its first pass over the event notes
-- the next transaction id (pg_snapshot_xmax); once every older transaction
-- has ended (pg_snapshot_xip), every suspend that read before the emit
-- committed has committed its wait, and a pass that then leaves no waiter
-- clears pending. A suspend that reads after the emit committed sees the
-- event. So no wake-up is lost; a missed one waits for the next reap (a
-- worker reaps as soon as one of its handlers parked a wait). The argument
-- needs each statement's own snapshot: READ COMMITTED, as the drivers call.
--
-- Lock order (every function here, and claim, complete, fail, cancel, reap):
--   1. task rows in descending id order: a child before its parent (a child's
--      end locks its parent to wake it; cancel locks a tree children first);
--      an event's waiters are locked SKIP LOCKED (emit_event and the reaper
--      never wait for one: the reaper takes a skipped one at its next pass)
--   2. steps, attempts, events (emit_event's insert of a new name waits at
--      most 100 ms for another transaction inserting the same name, then
--      raises 40001)
-- No advisory lock: until v0.3.0 emit_event and suspend serialised on
-- pg_advisory_xact_lock('conductor:event:' || name), which any login can take
-- and hold, stalling both.

begin;
set local role conductor_owner;

-- traceparent is new after v0.2.0 (the last parameter, issue 27): v0.2.0's
-- eleven-parameter spawn goes, or a call naming only those eleven would match both.
-- concurrency_limit is new after it too (issue 30), the last.
drop function if exists conductor.spawn(bigint, text, text, jsonb, text, integer, timestamptz, integer, text, text, integer);
-- the options of issue 30 are new after v0.2.0 too (concurrency_limit, the dedupe
-- options, expires_in): the twelve-parameter spawn goes
drop function if exists conductor.spawn(bigint, text, text, jsonb, text, integer, timestamptz, integer, text, text, integer, text);
-- rate_key is new after the dedupe options and expires_in (issue 30): the nineteen-parameter spawn goes too
drop function if exists conductor.spawn(bigint, text, text, jsonb, text, integer, timestamptz, integer, text, text, integer, text,
                                        integer, interval, text[], text, interval, interval, interval);

create or replace function conductor._check_step_name(name text) returns void
  language plpgsql immutable
  set search_path = pg_catalog, pg_temp
as $$
begin
  if _check_step_name.name is null or _check_step_name.name = ''
     or pg_catalog.octet_length(_check_step_name.name) > 1000 then
    raise exception 'invalid step name %: a non-empty name of at most 1000 bytes',
      conductor._echo(_check_step_name.name)
      using errcode = 'QC106';
  end if;
end
$$;

comment on function conductor._check_step_name(text) is
$$Raises QC106, naming the value (conductor._echo: cut to 100 characters), unless name is a
step name: non-empty, at most 1000 bytes.
Returns nothing otherwise. Called by save_step, spawn and suspend before they read or lock
anything; no locks.$$;

-- Raises QC106 naming span unless start + span ends by 9999-12-30 UTC, the last day of
-- conductor._time_range() (functions/internal): the years every driver can read.
-- Two statements, in this order, so an interval too large for a timestamp is
-- refused before start + span can overflow (22008).
create or replace function conductor._check_wait(what text, span interval, start timestamptz) returns void
  language plpgsql immutable
  set search_path = pg_catalog, pg_temp
as $$
begin
  if _check_wait.span > interval '10000 years' then
    raise exception 'invalid % %: the wait must end by 9999-12-30 UTC', _check_wait.what, _check_wait.span
      using errcode = 'QC106';
  end if;
  if _check_wait.start + _check_wait.span > timestamptz '9999-12-30 00:00:00+00' then
    raise exception 'invalid % %: the wait must end by 9999-12-30 UTC', _check_wait.what, _check_wait.span
      using errcode = 'QC106';
  end if;
end
$$;

comment on function conductor._check_wait(text, interval, timestamptz) is
$$Raises QC106 naming what and span unless start + span ends by 9999-12-30 UTC (the end of
conductor._time_range()); a span over 10000 years is refused before the sum can overflow.
Returns nothing otherwise (a NULL span passes). Called by suspend for a sleep's duration
and a timeout; no locks.$$;

-- Every child of a task, oldest first, with its outcome so far.
create or replace function conductor._children_summary(task_id bigint) returns jsonb
  language sql stable
  set search_path = pg_catalog, pg_temp
as $$
  select coalesce(pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
           'task_id', c.id, 'kind', c.kind, 'status', c.status, 'result', c.result, 'error', c.error)
           order by c.id), '[]')
    from conductor.tasks c
   where c.parent_id = _children_summary.task_id
$$;

comment on function conductor._children_summary(bigint) is
$$The children of task_id, oldest first, as a JSON array of {task_id, kind, status, result,
error}; [] when it has none. The outcome a children_all / children_any wait checkpoints:
called by suspend and _child_finished. Reads only, takes no locks, never raises.$$;

-- Queues waiting tasks again, their wait's outcome checkpointed under each one's wait
-- step: THE wake-up, whoever wakes (a child's end, emit_event, the reaper).
create or replace function conductor._wake_tasks(task_ids bigint[], outcome jsonb) returns integer
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_now timestamptz := conductor.now();
  v_woken integer;
  v_queues text[];
  v_queue text;
begin
  with target as (
    select t.id, t.wait_step from conductor.tasks t
     where t.id = any (_wake_tasks.task_ids) and t.status = 'waiting'
     order by t.id desc
       for no key update
  ), woken as (
    update conductor.tasks t
       set status = 'queued', run_at = v_now, claimed_by = null,
           wait_for = null, wait_event = null, wait_until = null, wait_step = null
      from target
     where t.id = target.id
    returning target.id, t.queue, target.wait_step
  ), checkpointed as (
    insert into conductor.steps (task_id, name, result, saved_at)
    select w.id, w.wait_step, _wake_tasks.outcome, v_now from woken w where w.wait_step is not null
    on conflict do nothing
  )
  select pg_catalog.count(*)::integer, pg_catalog.array_agg(distinct w.queue)
    into v_woken, v_queues
    from woken w;
  foreach v_queue in array coalesce(v_queues, '{}') loop
    perform conductor._notify_queue(v_queue);
  end loop;
  return v_woken;
end
$$;

comment on function conductor._wake_tasks(bigint[], jsonb) is
$$Queues each of task_ids that is waiting again (run_at now, its wait cleared), checkpoints
outcome under its wait step (a step already saved stays; a wait without a step saves
none) and notifies the queues of those woken; returns how many it woke. Skips the tasks
that are not waiting. Locks their rows (for no key update, descending id): a caller that
must not wait locks them first, SKIP LOCKED. Called by _wake, _wake_event_waiters, and so
by _child_finished, emit_event and reap; raises nothing of its own.$$;

create or replace function conductor._wake(task_id bigint, outcome jsonb) returns void
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
begin
  perform conductor._wake_tasks(array[_wake.task_id], _wake.outcome);
end
$$;

comment on function conductor._wake(bigint, jsonb) is
$$_wake_tasks for one task: queues task_id again if it is waiting, outcome checkpointed
under its wait step, and notifies its queue; does nothing when the task is not waiting.
Locks the task row (for no key update). Called by _child_finished and reap; raises nothing
of its own.$$;

-- What an event wait's step holds once the event came: one shape for suspend (the
-- event was there already), emit_event and the reaper (woken).
create or replace function conductor._event_outcome(name text, payload jsonb) returns jsonb
  language sql immutable
  set search_path = pg_catalog, pg_temp
as $$
  select pg_catalog.jsonb_build_object('event', _event_outcome.name, 'payload', _event_outcome.payload)
$$;

comment on function conductor._event_outcome(text, jsonb) is
$${"event": name, "payload": payload}: the outcome an event wait checkpoints when the event
came (suspend finding it, _wake_event_waiters waking it). Never raises.$$;

-- Wakes the waiters of an event that exists, with its stored payload, and waits for
-- none of them: a waiter another transaction holds (a concurrent wake-up, a cancel,
-- a timeout being ended) is skipped; if that transaction leaves it waiting, the reaper's
-- pass over pending events, or its next one, takes it (functions/reap).
create or replace function conductor._wake_event_waiters(name text) returns integer
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_outcome jsonb;
  v_ids bigint[];
begin
  select conductor._event_outcome(e.name, e.payload) into v_outcome
    from conductor.events e where e.name = _wake_event_waiters.name;
  if not found then
    return 0;
  end if;
  select pg_catalog.array_agg(w.id) into v_ids
    from (select t.id from conductor.tasks t
           where t.status = 'waiting' and t.wait_for = 'event' and t.wait_event = _wake_event_waiters.name
           order by t.id desc
             for no key update skip locked) w;
  if v_ids is null then
    return 0;
  end if;
  return conductor._wake_tasks(v_ids, v_outcome);
end
$$;

comment on function conductor._wake_event_waiters(text) is
$$Wakes every task waiting for event name, which exists: each is queued again with
{"event", "payload"} (the stored payload, _event_outcome) checkpointed under its wait step;
returns how many it woke (0 when the event does not exist). Never waits: waiters another
transaction holds are skipped (SKIP LOCKED), for the reaper's pass over pending events.
The one wake-up of emit_event and of reap(); raises nothing of its own.$$;

revoke execute on function conductor._check_step_name(text) from public;
revoke execute on function conductor._check_wait(text, interval, timestamptz) from public;
revoke execute on function conductor._children_summary(bigint) from public;
revoke execute on function conductor._wake_tasks(bigint[], jsonb) from public;
revoke execute on function conductor._wake(bigint, jsonb) from public;
revoke execute on function conductor._event_outcome(text, jsonb) from public;
revoke execute on function conductor._wake_event_waiters(text) from public;

create or replace function conductor.save_step(attempt_id bigint, name text, result jsonb default null)
  returns jsonb
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_task conductor.tasks;
  v_stored jsonb;
  v_max integer;
begin
  perform conductor._check_step_name(save_step.name);
  select s.max_result_bytes into v_max from conductor.settings s where s.one;
  if pg_catalog.pg_column_size(save_step.result) > v_max then
    raise exception 'step %: value of % bytes of jsonb is over the limit of % bytes (conductor.settings.max_result_bytes)',
      conductor._echo(save_step.name), pg_catalog.pg_column_size(save_step.result), v_max
      using errcode = 'QC107',
            detail = 'Nothing was stored; the task still runs.',
            hint = 'Store large data elsewhere and checkpoint a reference to it.';
  end if;
  v_task := conductor._held_task(save_step.attempt_id);

  insert into conductor.steps as s (task_id, name, result, attempt_id, saved_at)
  values (v_task.id, save_step.name, save_step.result, save_step.attempt_id, conductor.now())
  on conflict on constraint steps_pkey do nothing;
  if found then
    return save_step.result;
  end if;
  select s.result into v_stored from conductor.steps s
   where s.task_id = v_task.id and s.name = save_step.name;
  return v_stored;
end
$$;

comment on function conductor.save_step(bigint, text, jsonb) is
$$Checkpoints step name of the task held by attempt_id with result (any JSON). Returns the
stored result: this one, or the one saved first if the step was already checkpointed (the
first write wins). Raises QC201 lease lost, QC202 cancelled, QC203 no such attempt (then
nothing is stored), QC106 for an empty name or one over 1000 bytes, QC107 for a result
larger than conductor.settings.max_result_bytes (bytes of its jsonb form).$$;

create or replace function conductor.spawn(
  attempt_id      bigint,
  step            text,
  kind            text,
  payload         jsonb default '{}',
  queue           text default null,
  priority        integer default null,
  run_at          timestamptz default null,
  max_attempts    integer default null,
  dedupe_key      text default null,
  concurrency_key text default null,
  max_recoveries  integer default null,
  traceparent     text default null,
  concurrency_limit integer default null,
  dedupe_window   interval default null,
  dedupe_states   text[] default null,
  on_duplicate    text default null,
  debounce        interval default null,
  debounce_max    interval default null,
  expires_in      interval default null,
  rate_key        text default null
) returns bigint
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_task conductor.tasks;
  v_child bigint;
  v_dedupe conductor._dedupe_spec;
begin
  perform conductor._check_step_name(spawn.step);
  v_task := conductor._held_task(spawn.attempt_id);
  v_dedupe := conductor._dedupe_options(spawn.dedupe_window, spawn.dedupe_states, spawn.on_duplicate,
                                        spawn.debounce, spawn.debounce_max);

  select (s.result->>'task_id')::bigint into v_child
    from conductor.steps s where s.task_id = v_task.id and s.name = spawn.step;
  if found then
    if v_child is null then
      raise exception 'step % of task % is checkpointed and is not a spawn', conductor._echo(spawn.step), v_task.id
        using errcode = 'QC106', hint = 'Give each spawn a step name of its own.';
    end if;
    return v_child;
  end if;

  v_child := (conductor._enqueue(array[row(
                spawn.kind, spawn.payload, spawn.queue, spawn.priority, spawn.run_at, spawn.max_attempts,
                spawn.dedupe_key, spawn.concurrency_key, v_task.id, spawn.max_recoveries, null, null, null, null,
                spawn.traceparent, spawn.concurrency_limit, v_dedupe, spawn.expires_in, spawn.rate_key
              )::conductor._task_spec]))[1];
  insert into conductor.steps (task_id, name, result, attempt_id, saved_at)
  values (v_task.id, spawn.step, pg_catalog.jsonb_build_object('task_id', v_child),
          spawn.attempt_id, conductor.now());
  return v_child;
end
$$;

comment on function conductor.spawn(bigint, text, text, jsonb, text, integer, timestamptz, integer, text, text, integer, text, integer, interval, text[], text, interval, interval, interval, text) is
$$Enqueues a child of the task held by attempt_id (parent_id = that task, same run) and
checkpoints its id under step, in one transaction; a replay that asks for the same step
gets the same child, never a second one. Options as enqueue: one not given (queue,
priority, max_attempts, concurrency_key, max_recoveries, concurrency_limit) is the child's kind's
(configure_kind), else enqueue's default; the child's timeout is its kind's. Nothing is
taken from the parent. traceparent: the child's trace context, as enqueue's (a worker
passes the span that spawns it). dedupe_window, dedupe_states, on_duplicate, debounce,
debounce_max: as enqueue's, with dedupe_key (the answer, checkpointed, may be a holder
outside this run). expires_in: as enqueue's (NULL: the child's kind's, else
none). rate_key: as enqueue's (NULL: no per-key rate limit applies; not the kind's). Raises as enqueue, and QC201 lease lost, QC202 cancelled, QC203 no
such attempt, QC106 for a bad step name.$$;

create or replace function conductor.suspend(
  attempt_id bigint,
  step       text,
  wait_for   text,
  event      text default null,
  duration   interval default null,
  timeout    interval default null
) returns table (state text, result jsonb)
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_now timestamptz := conductor.now();
  v_task conductor.tasks;
  v_stored jsonb;
  v_found boolean;
  v_until timestamptz;
  v_payload jsonb;
  v_open bigint;
  v_done bigint;
begin
  perform conductor._check_step_name(suspend.step);
  if suspend.wait_for is null or suspend.wait_for not in ('children_all', 'children_any', 'event', 'sleep') then
    raise exception 'invalid wait_for %: ''children_all'', ''children_any'', ''event'' or ''sleep''',
      conductor._echo(suspend.wait_for)
      using errcode = 'QC106';
  end if;
  if suspend.wait_for = 'event' and (suspend.event is null or suspend.event = ''
                                     or pg_catalog.octet_length(suspend.event) > 1000) then
    raise exception 'invalid event name %: a non-empty name of at most 1000 bytes',
      conductor._echo(suspend.event)
      using errcode = 'QC106';
  end if;
  if suspend.wait_for = 'sleep' and (suspend.duration is null or suspend.duration < interval '0') then
    raise exception 'invalid sleep duration %: 0 or more', coalesce(suspend.duration::text, 'NULL')
      using errcode = 'QC106';
  end if;
  if suspend.timeout <= interval '0' then
    raise exception 'invalid timeout %: it must be positive', suspend.timeout using errcode = 'QC106';
  end if;
  if suspend.wait_for = 'sleep' then
    perform conductor._check_wait('sleep duration', suspend.duration, v_now);
  end if;
  if suspend.timeout is not null then
    perform conductor._check_wait('timeout', suspend.timeout, v_now);
  end if;

  -- the task's row lock gives this transaction its id before the event is read:
  -- the reaper's horizon over pending events relies on it (see the map)
  v_task := conductor._held_task(suspend.attempt_id);

  select s.result, true into v_stored, v_found
    from conductor.steps s where s.task_id = v_task.id and s.name = suspend.step;
  v_found := coalesce(v_found, false);

  if suspend.wait_for = 'sleep' then
    -- the wake time is checkpointed the first time, so a replay sleeps until the same instant
    if v_found then
      v_until := (v_stored->>'until')::timestamptz;
    else
      v_until := v_now + suspend.duration;
      insert into conductor.steps (task_id, name, result, attempt_id, saved_at)
      values (v_task.id, suspend.step, pg_catalog.jsonb_build_object('until', v_until),
              suspend.attempt_id, v_now);
      v_stored := pg_catalog.jsonb_build_object('until', v_until);
    end if;
    if v_until <= v_now then
      return query select 'ready'::text, v_stored;
      return;
    end if;
  elsif v_found then
    return query select 'ready'::text, v_stored;
    return;
  elsif suspend.wait_for = 'event' then
    select e.payload, true into v_payload, v_found from conductor.events e where e.name = suspend.event;
    if v_found then
      v_stored := conductor._event_outcome(suspend.event, v_payload);
      insert into conductor.steps (task_id, name, result, attempt_id, saved_at)
      values (v_task.id, suspend.step, v_stored, suspend.attempt_id, v_now);
      return query select 'ready'::text, v_stored;
      return;
    end if;
    v_until := v_now + suspend.timeout;
  else
    select pg_catalog.count(*) filter (where c.status = any (conductor.unfinished_statuses())),
           pg_catalog.count(*) filter (where c.status <> all (conductor.unfinished_statuses()))
      into v_open, v_done
      from conductor.tasks c where c.parent_id = v_task.id;
    if v_open = 0 or (suspend.wait_for = 'children_any' and v_done > 0) then
      v_stored := conductor._children_summary(v_task.id);
      insert into conductor.steps (task_id, name, result, attempt_id, saved_at)
      values (v_task.id, suspend.step, v_stored, suspend.attempt_id, v_now);
      return query select 'ready'::text, v_stored;
      return;
    end if;
    v_until := v_now + coalesce(suspend.timeout, interval '4 hours');
  end if;

  update conductor.tasks t
     set status = 'waiting',
         attempt = t.attempt - 1,
         lease_expires_at = null,
         claimed_by = null,  -- no worker holds a waiting task (the attempt row keeps who ran it)
         wait_for = suspend.wait_for,
         wait_event = suspend.event,
         wait_until = v_until,
         wait_step = suspend.step
   where t.id = v_task.id;
  update conductor.attempts a
     set outcome = 'suspended', finished_at = v_now
   where a.id = suspend.attempt_id;
  return query select 'waiting'::text, null::jsonb;
end
$$;

comment on function conductor.suspend(bigint, text, text, text, interval, interval) is
$$Waits, durably, on behalf of the task held by attempt_id; step names the wait's checkpoint.
wait_for 'children_all' / 'children_any' (timeout default 4 h: then the task ends timed_out
and its unfinished children are cancelled), 'event' (event = its name; timeout default
none: wait as long as it takes; a timed-out wait is checkpointed as {"timed_out": true}),
or 'sleep' (duration; the wake time is checkpointed, so a replay wakes at the same time).
Returns state 'ready' with the wait's outcome when it needs no waiting (the checkpoint
exists, the event was emitted, the children finished, the time passed): the handler goes
on. Otherwise parks the task as waiting, frees the worker (the attempt ends 'suspended',
counting no attempt) and returns 'waiting': the handler must stop; the task is queued again
when woken and runs from the top. Outcomes: {"event", "payload"} or {"event", "timed_out"};
a JSON array of the children's {task_id, kind, status, result, error}; {"until"}.
Locks only its task's row (then steps and attempts): it never waits for an emit_event of
the same event, nor an emit for it; when the two overlap and miss each other, reap() wakes
the task with the event at its next pass (functions/runs, the map).
Raises QC201/QC202/QC203 as complete does, QC106 for bad arguments (the message names
the value, cut as conductor._echo cuts it), among them a negative sleep, a timeout not
positive, and a sleep or timeout that would end after 9999-12-30 UTC.$$;

-- A new event's row, inserted pending (the reaper clears that, functions/reap). Another
-- transaction inserting the same name is waited for 100 ms at most (lock_timeout): a
-- client's open transaction never holds a worker's emit of that name longer.
create or replace function conductor._insert_event(name text, payload jsonb, at timestamptz) returns void
  language sql volatile
  set search_path = pg_catalog, pg_temp
  set lock_timeout = '100ms'
as $$
  insert into conductor.events as e (name, payload, emitted_at, pending)
  values (_insert_event.name, _insert_event.payload, _insert_event.at, true)
  on conflict on constraint events_pkey do nothing
$$;

comment on function conductor._insert_event(text, jsonb, timestamptz) is
$$Inserts event name (payload, emitted_at at) as pending unless it exists (the first payload
wins). Waits at most 100 ms (lock_timeout) for another transaction inserting the same name,
then raises 55P03, which emit_event reports as 40001. Called by emit_event only.$$;

create or replace function conductor.emit_event(name text, payload jsonb default '{}') returns integer
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_now timestamptz := conductor.now();
  v_given jsonb;
begin
  if emit_event.name is null or emit_event.name = '' or pg_catalog.octet_length(emit_event.name) > 1000 then
    raise exception 'invalid event name %: a non-empty name of at most 1000 bytes',
      conductor._echo(emit_event.name)
      using errcode = 'QC106';
  end if;
  -- the payload as enqueue takes one: a JSON object (SQL NULL: none, {}), at most max_payload_bytes
  v_given := coalesce(emit_event.payload, '{}');
  if pg_catalog.jsonb_typeof(v_given) <> 'object' then
    raise exception 'invalid payload for event %: a payload is a JSON object, got %',
      conductor._echo(emit_event.name), pg_catalog.jsonb_typeof(v_given)
      using errcode = 'QC102',
            hint = 'Wrap the value in an object, e.g. {"value": ...}.';
  end if;
  if pg_catalog.pg_column_size(v_given) > conductor._max_payload_bytes() then
    raise exception 'payload too large for event %: % bytes, the limit is % bytes',
      conductor._echo(emit_event.name), pg_catalog.pg_column_size(v_given), conductor._max_payload_bytes()
      using errcode = 'QC103',
            hint = 'Store large data elsewhere and pass a reference, or have an admin raise conductor.settings.max_payload_bytes.';
  end if;

  if not exists (select from conductor.events e where e.name = emit_event.name) then
    begin
      perform conductor._insert_event(emit_event.name, v_given, v_now);
    exception when lock_not_available then
      raise exception 'event % is being emitted by another transaction that has not committed',
        conductor._echo(emit_event.name)
        using errcode = '40001',
              detail = 'Nothing was recorded. If that transaction commits, its payload is the event''s.',
              hint = 'Retry the call.';
    end;
  end if;
  return conductor._wake_event_waiters(emit_event.name);
end
$$;

comment on function conductor.emit_event(text, jsonb) is
$$Records event name with payload (the first payload for a name wins; later emits keep it)
and wakes every task waiting for it, checkpointing {"event", "payload"} as each waiter's
outcome in the same transaction (_wake_event_waiters, the reaper's wake-up too). Returns how
many tasks it woke. An event emitted before anyone waits still counts: a later wait finds it
at once. A waiter whose timeout passed but that reap() has not reached yet is woken with the
payload (the outcome is whichever is checkpointed first, and stays). Callable from any
client, a trigger or a task. The payload is a JSON object, as enqueue's (SQL NULL, like
leaving it out, records {}).
Waits for no lock another session can hold (no advisory lock), and at most 100 ms for
another transaction inserting the same new name: a waiter another transaction holds is
skipped, and so is a suspend of this event that has not committed yet; reap() wakes those
at its next pass (a new event stays pending until it has). Raises QC106 for an
empty name or one over 1000 bytes, QC102 for a payload that is not an object, QC103 for one
over conductor.settings.max_payload_bytes (messages echo the name as conductor._echo cuts
it); 40001 when another transaction inserting a new event of that name has not committed
within 100 ms (retry); then nothing is recorded. prune() removes events emitted before its
cutoff that no task waits for.$$;

create or replace function conductor.children(task_id bigint)
  returns table (task_id bigint, kind text, status conductor.task_status, result jsonb,
                 error text, finished_at timestamptz)
  language sql stable
  security definer
  set search_path = pg_catalog, pg_temp
as $$
  select c.id, c.kind, c.status, c.result, c.error, c.finished_at
    from conductor.tasks c
   where c.parent_id = children.task_id
   order by c.id
$$;

comment on function conductor.children(bigint) is
$$The children of a task (spawned with parent_id = task_id), oldest first, with their
status, result and error so far.$$;

-- A child's end wakes a parent that waits for its children. It locks the parent
-- (a child before its parent: the lock order) and reads with a snapshot taken
-- after that lock, so a parent suspending at the same moment is either seen
-- waiting here or sees this child finished itself.
create or replace function conductor._child_finished() returns trigger
  language plpgsql
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_parent conductor.tasks;
begin
  perform from conductor.tasks p where p.id = new.parent_id for no key update;
  select p.* into v_parent from conductor.tasks p where p.id = new.parent_id;
  if v_parent.status = 'waiting'
     and v_parent.wait_for in ('children_all', 'children_any')
     and v_parent.wait_until > conductor.now()
     and (v_parent.wait_for = 'children_any'
          or not exists (select from conductor.tasks c
                          where c.parent_id = v_parent.id
                            and c.status = any (conductor.unfinished_statuses()))) then
    perform conductor._wake(v_parent.id, conductor._children_summary(v_parent.id));
  end if;
  return null;
end
$$;

comment on function conductor._child_finished() is
$$Trigger function of tasks_child_finished (after a child's status turns final): wakes the
parent through _wake, its children's _children_summary as the outcome, when the parent
waits for children_any, or for children_all and none is unfinished, before its wait_until.
Locks the parent row (a child before its parent: the lock order). Returns null.$$;

-- The WHEN tests finished_at, not the statuses: a status turns final from an
-- unfinished one exactly when finished_at turns from NULL to a time (every
-- function that writes tasks keeps unfinished <=> finished_at NULL, held by
-- sql/tests/schema/state_machine_keeps_its_invariants.sql). PostgreSQL reads a
-- trigger's WHEN from its stored text and prepares it at each statement that
-- updates tasks (every claim and complete): three null tests cost a claim and
-- its complete 143,000 CPU instructions less than the two status lists
-- did (bench/HISTORY.md, issue 30).
create or replace trigger tasks_child_finished
  after update of status on conductor.tasks
  for each row
  when (new.parent_id is not null and new.finished_at is not null and old.finished_at is null)
  execute function conductor._child_finished();

revoke execute on function conductor._child_finished() from public;
revoke execute on function conductor.save_step(bigint, text, jsonb) from public;
revoke execute on function conductor.spawn(bigint, text, text, jsonb, text, integer, timestamptz, integer, text, text, integer, text, integer, interval, text[], text, interval, interval, interval, text) from public;
revoke execute on function conductor.suspend(bigint, text, text, text, interval, interval) from public;
revoke execute on function conductor._insert_event(text, jsonb, timestamptz) from public;
revoke execute on function conductor.emit_event(text, jsonb) from public;
revoke execute on function conductor.children(bigint) from public;
grant execute on function conductor.save_step(bigint, text, jsonb) to conductor_worker, conductor_admin;
grant execute on function conductor.spawn(bigint, text, text, jsonb, text, integer, timestamptz, integer, text, text, integer, text, integer, interval, text[], text, interval, interval, interval, text) to conductor_worker, conductor_admin;
grant execute on function conductor.suspend(bigint, text, text, text, interval, interval) to conductor_worker, conductor_admin;
grant execute on function conductor.emit_event(text, jsonb) to conductor_client, conductor_worker, conductor_admin;
grant execute on function conductor.children(bigint) to conductor_client, conductor_worker, conductor_admin;

commit;
