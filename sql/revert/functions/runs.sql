-- Revert conductor:functions/runs from pg: back to its v0.2.0 bodies, and drops the helpers
-- the rework added
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
--
-- Checkpoint names are the caller's: a driver numbers a name used twice in one
-- run ('charge', 'charge#2') by counting as the handler runs, so a replay asks
-- for the same names in the same order.
--
-- A wake-up and its checkpoint are written in one transaction: an event's
-- payload, a wait's timeout, or the children's outcomes become the result of
-- the wait's step, so a resumed run sees the same outcome every time.
--
-- Lock order (every function here, and claim, complete, fail, cancel, reap):
--   1. advisory locks: an event's name (emit_event, suspend on an event)
--   2. task rows in descending id order: a child before its parent (a child's
--      end locks its parent to wake it; cancel locks a tree children first)
--   3. steps, attempts
-- emit_event and a suspend on the same event serialise on 1, and each reads
-- with a snapshot taken after it, so a waiter is either seen by the emit or
-- sees the event: no lost wake-up (READ COMMITTED, PostgreSQL's default).

begin;
set local role conductor_owner;

-- added after v0.2.0: spawn's traceparent (issue 27), concurrency_limit, dedupe options and expires_in (issue 30); v0.2.0's spawn comes back below
drop function conductor.spawn(bigint, text, text, jsonb, text, integer, timestamptz, integer, text, text, integer, text, integer, interval, text[], text, interval, interval, interval, text);

create or replace function conductor._check_step_name(name text) returns void
  language plpgsql immutable
  set search_path = pg_catalog, pg_temp
as $$
begin
  if _check_step_name.name is null or _check_step_name.name = ''
     or pg_catalog.octet_length(_check_step_name.name) > 1000 then
    raise exception 'invalid step name %: a non-empty name of at most 1000 bytes',
      coalesce(pg_catalog.quote_literal(_check_step_name.name), 'NULL')
      using errcode = 'QC106';
  end if;
end
$$;

comment on function conductor._check_step_name(text) is
$$Raises QC106, naming the value, unless name is a step name: non-empty, at most 1000 bytes.
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

-- Queues a waiting task again, its wait's outcome checkpointed under its wait step.
create or replace function conductor._wake(task_id bigint, outcome jsonb) returns void
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_now timestamptz := conductor.now();
  v_queue text;
begin
  with target as (
    select t.id, t.queue, t.wait_step from conductor.tasks t
     where t.id = _wake.task_id and t.status = 'waiting'
       for no key update
  ), woken as (
    update conductor.tasks t
       set status = 'queued', run_at = v_now,
           wait_for = null, wait_event = null, wait_until = null, wait_step = null
      from target
     where t.id = target.id
    returning target.id, target.queue, target.wait_step
  ), checkpointed as (
    insert into conductor.steps (task_id, name, result, saved_at)
    select w.id, w.wait_step, _wake.outcome, v_now from woken w where w.wait_step is not null
    on conflict do nothing
  )
  select w.queue into v_queue from woken w;
  if v_queue is not null then
    perform conductor._notify_queue(v_queue);
  end if;
end
$$;

comment on function conductor._wake(bigint, jsonb) is
$$Queues task_id again (run_at now, its wait cleared) if it is waiting, checkpoints outcome
under its wait step (a step already saved stays) and notifies its queue; does nothing when
the task is not waiting. Locks the task row (for no key update). Called by _child_finished
and reap; raises nothing of its own.$$;

revoke execute on function conductor._check_step_name(text) from public;
revoke execute on function conductor._check_wait(text, interval, timestamptz) from public;
revoke execute on function conductor._children_summary(bigint) from public;
revoke execute on function conductor._wake(bigint, jsonb) from public;

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
      pg_catalog.quote_literal(pg_catalog.left(save_step.name, 100)), pg_catalog.pg_column_size(save_step.result), v_max
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
  max_recoveries  integer default null
) returns bigint
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_task conductor.tasks;
  v_child bigint;
begin
  perform conductor._check_step_name(spawn.step);
  v_task := conductor._held_task(spawn.attempt_id);

  select (s.result->>'task_id')::bigint into v_child
    from conductor.steps s where s.task_id = v_task.id and s.name = spawn.step;
  if found then
    if v_child is null then
      raise exception 'step % of task % is checkpointed and is not a spawn', pg_catalog.quote_literal(spawn.step), v_task.id
        using errcode = 'QC106', hint = 'Give each spawn a step name of its own.';
    end if;
    return v_child;
  end if;

  v_child := (conductor._enqueue(array[row(
                spawn.kind, spawn.payload, spawn.queue, spawn.priority, spawn.run_at, spawn.max_attempts,
                spawn.dedupe_key, spawn.concurrency_key, v_task.id, spawn.max_recoveries, null, null, null, null
              )::conductor._task_spec]))[1];
  insert into conductor.steps (task_id, name, result, attempt_id, saved_at)
  values (v_task.id, spawn.step, pg_catalog.jsonb_build_object('task_id', v_child),
          spawn.attempt_id, conductor.now());
  return v_child;
end
$$;

comment on function conductor.spawn(bigint, text, text, jsonb, text, integer, timestamptz, integer, text, text, integer) is
$$Enqueues a child of the task held by attempt_id (parent_id = that task, same run) and
checkpoints its id under step, in one transaction; a replay that asks for the same step
gets the same child, never a second one. Options as enqueue: one not given (queue,
priority, max_attempts, concurrency_key, max_recoveries) is the child's kind's
(configure_kind), else enqueue's default; the child's timeout is its kind's. Nothing is
taken from the parent. Raises as enqueue, and QC201 lease lost, QC202 cancelled, QC203 no
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
  v_open integer;
  v_done integer;
begin
  perform conductor._check_step_name(suspend.step);
  if suspend.wait_for is null or suspend.wait_for not in ('children_all', 'children_any', 'event', 'sleep') then
    raise exception 'invalid wait_for %: ''children_all'', ''children_any'', ''event'' or ''sleep''',
      coalesce(pg_catalog.quote_literal(suspend.wait_for), 'NULL')
      using errcode = 'QC106';
  end if;
  if suspend.wait_for = 'event' and (suspend.event is null or suspend.event = ''
                                     or pg_catalog.octet_length(suspend.event) > 1000) then
    raise exception 'invalid event name %: a non-empty name of at most 1000 bytes',
      coalesce(pg_catalog.quote_literal(suspend.event), 'NULL')
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

  if suspend.wait_for = 'event' then
    perform pg_catalog.pg_advisory_xact_lock(
      pg_catalog.hashtextextended('conductor:event:' || suspend.event, 0));
  end if;
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
      v_stored := pg_catalog.jsonb_build_object('event', suspend.event, 'payload', v_payload);
      insert into conductor.steps (task_id, name, result, attempt_id, saved_at)
      values (v_task.id, suspend.step, v_stored, suspend.attempt_id, v_now);
      return query select 'ready'::text, v_stored;
      return;
    end if;
    v_until := v_now + suspend.timeout;
  else
    select pg_catalog.count(*) filter (where c.status in ('queued', 'running', 'waiting')),
           pg_catalog.count(*) filter (where c.status not in ('queued', 'running', 'waiting'))
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
Raises QC201/QC202/QC203 as complete does, QC106 for bad arguments (the message names
the value), among them a negative sleep, a timeout not positive, and a sleep or timeout that
would end after 9999-12-30 UTC.$$;

create or replace function conductor.emit_event(name text, payload jsonb default '{}') returns integer
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_now timestamptz := conductor.now();
  v_given jsonb;
  v_payload jsonb;
  v_woken integer;
  v_queues text[];
  v_queue text;
begin
  if emit_event.name is null or emit_event.name = '' or pg_catalog.octet_length(emit_event.name) > 1000 then
    raise exception 'invalid event name %: a non-empty name of at most 1000 bytes',
      coalesce(pg_catalog.quote_literal(emit_event.name), 'NULL')
      using errcode = 'QC106';
  end if;
  -- the payload as enqueue takes one: a JSON object (SQL NULL: none, {}), at most max_payload_bytes
  v_given := coalesce(emit_event.payload, '{}');
  if pg_catalog.jsonb_typeof(v_given) <> 'object' then
    raise exception 'invalid payload for event %: a payload is a JSON object, got %',
      pg_catalog.quote_literal(emit_event.name), pg_catalog.jsonb_typeof(v_given)
      using errcode = 'QC102',
            hint = 'Wrap the value in an object, e.g. {"value": ...}.';
  end if;
  if pg_catalog.pg_column_size(v_given) > conductor._max_payload_bytes() then
    raise exception 'payload too large for event %: % bytes, the limit is % bytes',
      pg_catalog.quote_literal(emit_event.name), pg_catalog.pg_column_size(v_given), conductor._max_payload_bytes()
      using errcode = 'QC103',
            hint = 'Store large data elsewhere and pass a reference, or have an admin raise conductor.settings.max_payload_bytes.';
  end if;
  perform pg_catalog.pg_advisory_xact_lock(pg_catalog.hashtextextended('conductor:event:' || emit_event.name, 0));

  insert into conductor.events as e (name, payload, emitted_at)
  values (emit_event.name, v_given, v_now)
  on conflict on constraint events_pkey do nothing;
  select e.payload into v_payload from conductor.events e where e.name = emit_event.name;

  with waiters as (
    select t.id, t.wait_step from conductor.tasks t
     where t.status = 'waiting' and t.wait_for = 'event' and t.wait_event = emit_event.name
     order by t.id desc
       for no key update
  ), woken as (
    update conductor.tasks t
       set status = 'queued', run_at = v_now,
           wait_for = null, wait_event = null, wait_until = null, wait_step = null
      from waiters w
     where t.id = w.id
    returning t.id, t.queue, w.wait_step
  ), checkpointed as (
    insert into conductor.steps (task_id, name, result, saved_at)
    select w.id, w.wait_step,
           pg_catalog.jsonb_build_object('event', emit_event.name, 'payload', v_payload), v_now
      from woken w
     where w.wait_step is not null
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

comment on function conductor.emit_event(text, jsonb) is
$$Records event name with payload (the first payload for a name wins; later emits keep it)
and wakes every task waiting for it, checkpointing {"event", "payload"} as each waiter's
outcome in the same statement. Returns how many tasks it woke. An event emitted before
anyone waits still counts: a later wait finds it at once. A waiter whose timeout passed
but that reap() has not reached yet is woken with the payload (the outcome is whichever
is checkpointed first, and stays). Callable from any client, a
trigger or a task. The payload is a JSON object, as enqueue's (SQL NULL, like leaving it
out, records {}). Raises QC106 for an empty name or one over 1000 bytes, QC102 for a payload
that is not an object, QC103 for one over conductor.settings.max_payload_bytes; then
nothing is recorded. prune() removes events emitted before its cutoff that no task waits
for.$$;

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
                            and c.status in ('queued', 'running', 'waiting'))) then
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

create or replace trigger tasks_child_finished
  after update of status on conductor.tasks
  for each row
  when (new.parent_id is not null
        and new.status in ('succeeded', 'failed', 'cancelled', 'timed_out', 'dead')
        and old.status in ('queued', 'running', 'waiting'))
  execute function conductor._child_finished();

revoke execute on function conductor._child_finished() from public;
revoke execute on function conductor.save_step(bigint, text, jsonb) from public;
revoke execute on function conductor.spawn(bigint, text, text, jsonb, text, integer, timestamptz, integer, text, text, integer) from public;
revoke execute on function conductor.suspend(bigint, text, text, text, interval, interval) from public;
revoke execute on function conductor.emit_event(text, jsonb) from public;
revoke execute on function conductor.children(bigint) from public;
grant execute on function conductor.save_step(bigint, text, jsonb) to conductor_worker, conductor_admin;
grant execute on function conductor.spawn(bigint, text, text, jsonb, text, integer, timestamptz, integer, text, text, integer) to conductor_worker, conductor_admin;
grant execute on function conductor.suspend(bigint, text, text, text, interval, interval) to conductor_worker, conductor_admin;
grant execute on function conductor.emit_event(text, jsonb) to conductor_client, conductor_worker, conductor_admin;
grant execute on function conductor.children(bigint) to conductor_client, conductor_worker, conductor_admin;

-- what the rework added (the bodies above no longer call them)
drop function conductor._insert_event(text, jsonb, timestamptz);
drop function conductor._wake_event_waiters(text);
drop function conductor._event_outcome(text, jsonb);
drop function conductor._wake_tasks(bigint[], jsonb);

commit;
