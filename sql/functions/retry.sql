-- Deploy conductor:functions/retry to pg
-- (reworked after v0.2.0; the released body is sql/released/functions/retry@v0.2.0.sql)
--
-- conductor.retry(task_id, keep_steps): a person (or a client) puts a failed,
-- dead, timed-out, expired or cancelled task back in its queue, due now, with fresh
-- counts (attempt and recoveries zero, error and result cleared) and a fresh
-- deadline to start (now + its expires_in, schema/expiry) when it has one. Its attempts
-- stay for forensics; its checkpointed steps stay too, so the run resumes
-- where it stopped, unless keep_steps => false.
--
-- A run's root retried starts the run's count of recoveries afresh (its
-- conductor.run_recoveries row goes): "Retrying it from the dashboard starts it
-- again with a fresh count." When that run was failed by its limit
-- (settings.max_run_recoveries, functions/reap), the descendants the failure
-- cancelled (run_recoveries.stopped) are queued again with it, each with fresh
-- counts, so the run resumes as it was; with keep_steps => false they stay
-- cancelled (the replay spawns new children).
--
-- Tables: conductor.tasks, conductor.steps, conductor.run_recoveries,
-- conductor.task_deadlines (a fresh deadline to start).
-- Lock order: the stopped descendants, then the task (descending id: children
-- before parents), FOR UPDATE; then its run_recoveries row (written only under
-- a lock of the root's row: FOR UPDATE excludes the reapers counting the run,
-- which skip the root meanwhile). A retry waits for those rows: it is the
-- caller's own call, and no worker waits for a retry's lock on a finished task.

begin;
set local role conductor_owner;

-- The statuses retry takes a task back from: every finished one but succeeded. IMMUTABLE
-- and plpgsql like conductor.finished_statuses() (functions/internal), so a call folds to
-- the constant array.
create or replace function conductor.retryable_statuses() returns conductor.task_status[]
  language plpgsql immutable parallel safe
  set search_path = pg_catalog, pg_temp
as $$
begin
  return array['failed', 'cancelled', 'timed_out', 'expired', 'dead']::conductor.task_status[];
end
$$;

comment on function conductor.retryable_statuses() is
$$The statuses of a task that conductor.retry() puts back in its queue: failed, cancelled,
timed_out, expired, dead (every conductor.finished_statuses() but succeeded), in the enum's order.
The one list retry and retry_matching read.$$;

revoke execute on function conductor.retryable_statuses() from public;
grant execute on function conductor.retryable_statuses() to conductor_client, conductor_worker, conductor_admin;

-- The one rule of putting a finished task back in its queue (retry, rewind): due now, fresh
-- counts, a fresh deadline to start; for a run's root, the descendants its failure by the
-- recovery limit cancelled (stopped) queued again with it and the run's recoveries afresh;
-- then the workers of those queues woken. The caller holds the rows and checked the status.
create or replace function conductor._requeue_run(task_id bigint, stopped bigint[], verb text) returns void
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_now timestamptz := conductor.now();
  v_task conductor.tasks;
  v_queues text[];
  v_queue text;
begin
  begin
    update conductor.tasks t
       set status = 'queued', attempt = 0, recoveries = 0, run_at = v_now,
           expires_at = v_now + t.expires_in,  -- a fresh deadline to start (NULL: none)
           error = null, result = null, finished_at = null, lease_expires_at = null, claimed_by = null,
           wait_for = null, wait_event = null, wait_until = null, wait_step = null
     where t.id = _requeue_run.task_id
    returning t.* into v_task;
  exception when unique_violation then
    raise exception 'task % cannot be %: another task holds its dedupe_key % (unfinished, or finished in its dedupe_states for the period)',
      _requeue_run.task_id, _requeue_run.verb,
      conductor._echo((select t.dedupe_key from conductor.tasks t where t.id = _requeue_run.task_id))
      using errcode = 'QC205';
  end;

  if v_task.id = v_task.root_id then
    -- the descendants the run's limit cancelled, back with their root
    if _requeue_run.stopped is not null then
      begin
        with requeued as (
          update conductor.tasks t
             set status = 'queued', attempt = 0, recoveries = 0, run_at = v_now,
                 expires_at = v_now + t.expires_in,
                 error = null, result = null, finished_at = null, lease_expires_at = null, claimed_by = null,
                 wait_for = null, wait_event = null, wait_until = null, wait_step = null
           where t.id = any (_requeue_run.stopped) and t.status = 'cancelled'
          returning t.queue
        )
        select pg_catalog.array_agg(distinct q.queue) into v_queues from requeued q;
      exception when unique_violation then
        raise exception 'task % cannot be %: another unfinished task holds the dedupe_key of a task of its run that its failure cancelled',
          _requeue_run.task_id, _requeue_run.verb
          using errcode = 'QC205',
                detail = 'The root of a run that conductor.settings.max_run_recoveries failed is queued again with the tasks that failure cancelled.';
      end;
    end if;
    delete from conductor.run_recoveries r where r.root_id = _requeue_run.task_id;
  end if;

  -- the fresh deadlines to start, where reap() looks for them (schema/expiry)
  insert into conductor.task_deadlines as d (task_id, expires_at)
  select t.id, t.expires_at from conductor.tasks t
   where t.id = any (_requeue_run.task_id || coalesce(_requeue_run.stopped, '{}'))
     and t.status = 'queued' and t.expires_at is not null
  on conflict on constraint task_deadlines_pkey do update set expires_at = excluded.expires_at;

  perform conductor._notify_queue(v_task.queue);
  foreach v_queue in array coalesce(v_queues, '{}') loop
    if v_queue <> v_task.queue then
      perform conductor._notify_queue(v_queue);
    end if;
  end loop;
end
$$;

comment on function conductor._requeue_run(bigint, bigint[], text) is
$$Internal: puts finished task task_id back in its queue, due now, with fresh counts and a
fresh deadline to start; when it is a run's root, also the tasks of stopped still cancelled
(those its failure by the recovery limit cancelled), and its run_recoveries row goes; wakes
the workers of their queues. Raises QC205 (naming the call by verb: 'retried', 'rewound')
when another task holds a dedupe_key they need. The caller locked the rows and checked the
status.$$;

create or replace function conductor.retry(task_id bigint, keep_steps boolean default true) returns bigint
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_task conductor.tasks;
  v_stopped bigint[];
begin
  if coalesce(retry.keep_steps, true) then
    select r.stopped into v_stopped from conductor.run_recoveries r where r.root_id = retry.task_id;
    perform from conductor.tasks t where t.id = any (v_stopped) order by t.id desc for update;
  end if;
  select t.* into v_task from conductor.tasks t where t.id = retry.task_id for update;
  if not found then
    raise exception 'task % does not exist', retry.task_id using errcode = 'QC203';
  end if;
  if v_task.status <> all (conductor.retryable_statuses()) then
    raise exception 'task % is %; only a failed, dead, timed_out, expired or cancelled task can be retried',
      retry.task_id, v_task.status
      using errcode = 'QC204';
  end if;

  perform conductor._requeue_run(retry.task_id, v_stopped, 'retried');

  if not coalesce(retry.keep_steps, true) then
    delete from conductor.steps s where s.task_id = retry.task_id;
    -- a run started afresh replays nothing: the next claimer records its code (schema/code_versions)
    update conductor.tasks t set code_version = null
     where t.id = retry.task_id and t.code_version is not null;
  end if;

  return retry.task_id;
end
$$;

comment on function conductor.retry(bigint, boolean) is
$$Puts a failed, dead, timed_out, expired or cancelled task back in its queue, due now, with
fresh counts and, when it has an expires_in, a fresh deadline to start (now + expires_in);
returns its id. Its checkpointed steps are kept (the run resumes after
them) unless keep_steps => false (which also forgets the code version the run started
on, tasks.code_version: nothing is left to replay); kept spawn steps give the replay the same children
(retry those separately, or pass keep_steps => false for new ones). A run's root retried
also starts the run's recoveries afresh (conductor.run_recoveries); when the run was
failed by conductor.settings.max_run_recoveries, the descendants that failure cancelled are
queued again with it, with fresh counts, unless keep_steps => false. Locks those tasks and
then the task (FOR UPDATE, waiting). Raises QC203 when it does not exist, QC204 when it is
in another status, QC205 when another task holds its dedupe_key (or that of a descendant
it would queue again): an unfinished one, or a finished one in its dedupe_states whose
dedupe period (dedupe_until) is the task's; then nothing changes.$$;

revoke execute on function conductor._requeue_run(bigint, bigint[], text) from public;
revoke execute on function conductor.retry(bigint, boolean) from public;
grant execute on function conductor.retry(bigint, boolean) to conductor_client, conductor_admin;

commit;
