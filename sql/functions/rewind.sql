-- Deploy conductor:functions/rewind to pg
--
-- Rewind and fork (issue 31): retry keeps all of a run's steps or none; these keep
-- the steps saved before a chosen one.
--
--   conductor.rewind(task_id, from_step) -> bigint   the task again, from from_step
--   conductor.fork(task_id, from_step) -> bigint     a copy of the task, from from_step
--   conductor._steps_from(task_id, from_step)        the steps at and after it
--   conductor._check_rewindable(task_id, status, what)   QC204 unless finished
--
-- "Before" is the order the steps were saved in (conductor.steps.seq, schema/rewind).
-- A durable handler asks for its steps in the same order every time it runs, so
-- the steps before from_step are those its replay reaches first; from_step and every
-- later one run again.
--
-- What a rewind does with the rest of the run, step by step:
--   a spawn step rewound    its child (the task whose id the step holds, when it is a
--                           child of this task: a dedupe holder outside the run is left
--                           alone) is cancelled with its descendants if unfinished, and
--                           detached (parent_id NULL; root_id stays, so the run's
--                           timeline still shows it): the replay's spawn enqueues a new
--                           child, and a wait for children counts only the new ones
--   a wait step rewound     the replay waits again: an event wait finds the same event
--                           (events are kept; the first payload wins), a sleep sleeps its
--                           full duration from the replay, a children wait reads the
--                           children the task has then
--   kept steps              as they were: a kept spawn's child is still the task's
-- As retry does, a run's root rewound starts the run's recoveries afresh, and the
-- descendants a failure by the recovery limit cancelled are queued again, except the
-- detached ones.
--
-- A fork copies the task (kind, payload, queue, priority, retry and recovery policy,
-- keys, timeout, limits; not its dedupe_key, which the source holds) as a new run (no
-- parent), with the steps before from_step, in their order, and records its source in
-- conductor.forks (get_task's forked_from, forked_at_step). The source is not changed.
-- A copy carrying steps has the source's started_at: claim hands steps only to a task
-- started before, which spares a first claim the lookup.
-- Kept spawn steps name the source's children: the fork reads their ids, it does not
-- own them (a wait for children after from_step counts the fork's own children only:
-- fork from the spawn step to run children again).
--
-- Tables: conductor.tasks, conductor.steps, conductor.forks, conductor.run_recoveries,
-- conductor.task_deadlines.
-- Lock order (the engine's, functions/runs): the rewound children's trees and the
-- stopped descendants, then the task, in descending id (children before parents), FOR
-- UPDATE as retry locks; then steps. Like retry, a rewind waits for those rows: it is
-- the caller's own call on a finished run, which no worker holds. A fork locks the
-- source's row FOR SHARE (steps are read under it: a concurrent rewind waits) and
-- writes only new rows.

begin;
set local role conductor_owner;

create or replace function conductor._check_rewindable(task_id bigint, status conductor.task_status, what text)
  returns void
  language plpgsql immutable
  set search_path = pg_catalog, pg_temp
as $$
begin
  if _check_rewindable.status = any (conductor.unfinished_statuses()) then
    raise exception 'task % is %; only a finished task can be %', _check_rewindable.task_id,
      _check_rewindable.status, _check_rewindable.what
      using errcode = 'QC204',
            hint = 'Cancel it first, or wait for it to finish.';
  end if;
end
$$;

comment on function conductor._check_rewindable(bigint, conductor.task_status, text) is
$$Raises QC204 ('task <id> is <status>; only a finished task can be <what>') unless status is
finished (not in conductor.unfinished_statuses()): the one rule of rewind and fork. Locks
nothing.$$;

revoke execute on function conductor._check_rewindable(bigint, conductor.task_status, text) from public;

create or replace function conductor._steps_from(task_id bigint, from_step text)
  returns table (name text, result jsonb)
  language plpgsql stable
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_seq bigint;
begin
  if _steps_from.from_step is null then
    raise exception 'invalid step NULL: name a step of task %', _steps_from.task_id using errcode = 'QC130';
  end if;
  select s.seq into v_seq from conductor.steps s
   where s.task_id = _steps_from.task_id and s.name = _steps_from.from_step;
  if not found then
    raise exception 'task % has no step %', _steps_from.task_id, conductor._echo(_steps_from.from_step)
      using errcode = 'QC130',
            hint = 'conductor.steps lists a task''s steps; the order they were saved in is seq.';
  end if;
  return query
  select s.name, s.result from conductor.steps s
   where s.task_id = _steps_from.task_id and s.seq >= v_seq
   order by s.seq;
end
$$;

comment on function conductor._steps_from(bigint, text) is
$$The steps of task_id saved at or after from_step (by conductor.steps.seq), from_step
first: what a rewind deletes. Raises QC130 naming the step (conductor._echo) when the task
has no step from_step (or it is NULL). Reads only; locks nothing.$$;

revoke execute on function conductor._steps_from(bigint, text) from public;

create or replace function conductor.rewind(task_id bigint, from_step text) returns bigint
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_task conductor.tasks;
  v_status conductor.task_status;
  v_steps text[];
  v_children bigint[];
  v_detached bigint[];
  v_stopped bigint[];
begin
  -- the status read first without a lock (the refusal named before the step is looked up),
  -- and again below under the lock, which decides
  select t.status into v_status from conductor.tasks t where t.id = rewind.task_id;
  if not found then
    raise exception 'task % does not exist', rewind.task_id using errcode = 'QC203';
  end if;
  perform conductor._check_rewindable(rewind.task_id, v_status, 'rewound');
  -- the steps to delete, and the children their spawns checkpointed
  select pg_catalog.array_agg(f.name),
         pg_catalog.array_agg((f.result->>'task_id')::bigint)
           filter (where pg_catalog.jsonb_typeof(f.result) = 'object'
                     and pg_catalog.jsonb_typeof(f.result->'task_id') = 'number')
    into v_steps, v_children
    from conductor._steps_from(rewind.task_id, rewind.from_step) f;
  with recursive tree as (
    select c.id from conductor.tasks c where c.id = any (v_children) and c.parent_id = rewind.task_id
    union all
    select c.id from conductor.tasks c join tree on c.parent_id = tree.id
  )
  select pg_catalog.array_agg(tree.id) into v_detached from tree;
  select r.stopped into v_stopped from conductor.run_recoveries r where r.root_id = rewind.task_id;

  perform from conductor.tasks t
   where t.id = any (coalesce(v_detached, '{}') || coalesce(v_stopped, '{}') || rewind.task_id)
   order by t.id desc
     for update;
  select t.* into v_task from conductor.tasks t where t.id = rewind.task_id;
  perform conductor._check_rewindable(rewind.task_id, v_task.status, 'rewound');

  -- the rewound spawns' children: cancelled when unfinished (their trees with them), detached
  if v_detached is not null then
    perform conductor._cancel_trees(
      array(select t.id from conductor.tasks t where t.id = any (v_children) and t.parent_id = rewind.task_id),
      'cancelled');
    update conductor.tasks t set parent_id = null
     where t.id = any (v_children) and t.parent_id = rewind.task_id;
  end if;

  perform conductor._requeue_run(
    rewind.task_id,
    array(select s.id from pg_catalog.unnest(v_stopped) s(id) where s.id <> all (coalesce(v_detached, '{}'))),
    'rewound');
  delete from conductor.steps s where s.task_id = rewind.task_id and s.name = any (v_steps);

  return rewind.task_id;
end
$$;

comment on function conductor.rewind(bigint, text) is
$$Puts a finished task (succeeded, failed, cancelled, timed_out, expired or dead) back in its
queue, due now, with fresh counts as retry does, keeping the steps saved before from_step
(conductor.steps.seq) and deleting from_step and every later one: the replay runs from
from_step on. Returns task_id. A rewound spawn step's child (a child of this task) is
cancelled with its descendants when unfinished and detached (parent_id NULL, root_id kept):
the replay spawns a new one. A rewound wait waits again (an event wait finds the same
event; a sleep sleeps its full duration). A run's root rewound starts its recoveries afresh
and queues again the descendants its failure by the recovery limit cancelled (not the
detached ones). Locks the rewound children's trees, those descendants and the task (FOR
UPDATE, descending id, waiting). Raises QC203 when the task does not exist, QC130 when it
has no step from_step (the message names it), QC204 when it is unfinished (queued, running,
waiting), QC205 when another task holds its dedupe_key; then nothing changes.$$;

create or replace function conductor.fork(task_id bigint, from_step text) returns bigint
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_now timestamptz := conductor.now();
  v_task conductor.tasks;
  v_from bigint;
  v_fork bigint;
begin
  select t.* into v_task from conductor.tasks t where t.id = fork.task_id for share;
  if not found then
    raise exception 'task % does not exist', fork.task_id using errcode = 'QC203';
  end if;
  perform conductor._check_rewindable(fork.task_id, v_task.status, 'forked');
  perform from conductor._steps_from(fork.task_id, fork.from_step) limit 1;  -- QC130 for an unknown step
  select s.seq into v_from from conductor.steps s where s.task_id = fork.task_id and s.name = fork.from_step;

  v_fork := (conductor._enqueue(array[row(
               v_task.kind, v_task.payload, v_task.queue, v_task.priority, v_now, v_task.max_attempts,
               null, v_task.concurrency_key, null, v_task.max_recoveries, v_task.backoff_base,
               v_task.backoff_factor, v_task.backoff_max, v_task.timeout, v_task.traceparent,
               v_task.concurrency_limit, null, v_task.expires_in, v_task.rate_key
             )::conductor._task_spec]))[1];
  insert into conductor.steps (task_id, name, result, attempt_id, saved_at)
  select v_fork, s.name, s.result, null, s.saved_at
    from conductor.steps s
   where s.task_id = fork.task_id and s.seq < v_from
   order by s.seq;
  if found then
    -- claim looks a task's steps up only when it was started before (tasks.started_at, so a
    -- first claim costs no lookup): the copy carries steps the source started, so it has
    -- the source's start, and the code version they were saved under (schema/code_versions:
    -- only a worker that can replay it takes the copy)
    update conductor.tasks t set started_at = v_task.started_at, code_version = v_task.code_version
     where t.id = v_fork;
  end if;
  insert into conductor.forks (task_id, source_id, from_step, forked_at)
  values (v_fork, fork.task_id, fork.from_step, v_now);
  return v_fork;
end
$$;

comment on function conductor.fork(bigint, text) is
$$Copies a finished task as a new run, due now: the same kind, payload, queue, priority,
retry and recovery policy, concurrency key and limit, rate key, timeout, expires_in and
traceparent (not its dedupe_key, nor its parent: the copy is a root), with the steps the
source saved before from_step (conductor.steps.seq), in their order, so the copy runs from
from_step on, and with the source's code_version when it carries steps (only a worker that
can replay that version claims it). Records the source in conductor.forks (get_task:
forked_from, forked_at_step).
Returns the new task's id; a copy that carries steps has the source's started_at (claim
hands steps only to a task started before). The source is not changed. Kept spawn steps name the source's
children, which the copy reads but does not own. Locks the source's row FOR SHARE. Raises
QC203 when the task does not exist, QC130 when it has no step from_step (the message names
it), QC204 when it is unfinished (queued, running, waiting); then nothing is written.$$;

revoke execute on function conductor.rewind(bigint, text) from public;
revoke execute on function conductor.fork(bigint, text) from public;
grant execute on function conductor.rewind(bigint, text) to conductor_client, conductor_admin;
grant execute on function conductor.fork(bigint, text) to conductor_client, conductor_admin;

commit;
