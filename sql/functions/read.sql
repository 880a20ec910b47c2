-- Deploy conductor:functions/read to pg
-- (reworked after v0.2.0; the released body is sql/released/functions/read@v0.2.0.sql)
--
-- Reading tasks through the API (the tables are readable too):
--   conductor.list_attempts(task_ids)           the attempts of tasks, numbered
--   conductor.get_task(task_id)                 one task with all its attempts
--   conductor.list_tasks(status, queue, kind, ...) newest first, keyset-paginated
--
-- What a person reads (issue 27), the one rule every reader shows: a task's attempts are
-- numbered 1..n in claim order (number: one per claim, whatever became of it: lost,
-- released, suspended, i.e. the run waited and the next attempt resumes it, failed,
-- cancelled, succeeded). attempts.attempt is not that number: it is tasks.attempt at the
-- claim, the retry budget used counting that claim, which a lost or released attempt and
-- a wait give back (so two resumes of a durable run both read 1); the budget is read from
-- the task instead, as "tries used: tasks.attempt of tasks.max_attempts".

begin;
set local role conductor_owner;

create or replace function conductor.list_attempts(task_ids bigint[])
  returns table (
    number integer, id bigint, task_id bigint, attempt integer, worker_id text, host text, pid integer,
    claimed_at timestamptz, finished_at timestamptz, outcome text, error text, traceback text)
  language sql stable
  security definer
  set search_path = pg_catalog, pg_temp
as $$
  select (pg_catalog.row_number() over (partition by a.task_id order by a.id))::integer,
         a.id, a.task_id, a.attempt, a.worker_id, a.host, a.pid, a.claimed_at, a.finished_at,
         a.outcome, a.error, a.traceback
    from conductor.attempts a
   where a.task_id = any (list_attempts.task_ids)
   order by a.task_id, a.id
$$;

comment on function conductor.list_attempts(bigint[]) is
$$The attempts of the tasks task_ids (one row per claim), by task then claim order, each
with number: 1..n in claim order within its task, the attempt number a person reads (the
CLI's and the dashboard's #n), whatever its outcome (NULL while it runs; lost, released,
suspended: the run waited and the next attempt resumes it; failed, cancelled, succeeded).
attempt is the retry budget the task had used at that claim, counting it (tasks.attempt
then), which lost and released attempts and waits give back: not a number to show as the
attempt's. Reads only; any number of callers.$$;

-- get_task gains the dedupe options (issue 30), a fork's source, the code version and the
-- graph (issue 31): its return type changes, so it is dropped and created again (watch, in functions/notify, returns
-- the same columns)
drop function if exists conductor.get_task(bigint);
create or replace function conductor.get_task(task_id bigint)
  returns table (
    id bigint, queue text, kind text, status conductor.task_status, payload jsonb,
    result jsonb, error text, priority integer, run_at timestamptz, attempt integer,
    max_attempts integer, recoveries integer, max_recoveries integer,
    parent_id bigint, root_id bigint, dedupe_key text, concurrency_key text,
    enqueued_at timestamptz, started_at timestamptz, finished_at timestamptz,
    attempts jsonb, timeout interval,
    dedupe_states conductor.task_status[], dedupe_until timestamptz, debounce_until timestamptz,
    forked_from bigint, forked_at_step text, code_version text, graph_id bigint)
  language plpgsql stable
  security definer
  set search_path = pg_catalog, pg_temp
as $$
begin
  return query
  select t.id, t.queue, t.kind, t.status, t.payload, t.result, t.error, t.priority,
         t.run_at, t.attempt, t.max_attempts, t.recoveries, t.max_recoveries,
         t.parent_id, t.root_id, t.dedupe_key, t.concurrency_key,
         t.enqueued_at, t.started_at, t.finished_at,
         coalesce((select pg_catalog.jsonb_agg(pg_catalog.to_jsonb(a) - 'task_id' order by a.number)
                     from conductor.list_attempts(array[t.id]) a), '[]'),
         t.timeout, t.dedupe_states, t.dedupe_until, t.debounce_until,
         f.source_id, f.from_step, t.code_version, t.graph_id
    from conductor.tasks t
    left join conductor.forks f on f.task_id = t.id
   where t.id = get_task.task_id;
  if not found then
    raise exception 'task % does not exist', get_task.task_id using errcode = 'QC203';
  end if;
end
$$;

comment on function conductor.get_task(bigint) is
$$One task: status, payload, result, last error, counts (attempt of max_attempts: the
retry budget used, which lost and released attempts and waits do not use), attempts (a
JSON array, oldest first, each as conductor.list_attempts answers it: number 1..n in
claim order, worker, times, outcome, error and traceback) and timeout (how long one
attempt may run; NULL: no limit). The dedupe options stored (issue 30): dedupe_states (the
statuses in which it holds its dedupe_key for its period; NULL: only while unfinished),
dedupe_until (the period's end; 'infinity': none) and debounce_until (a debounced task: the
latest its run_at may move to; NULL: not debounced). forked_from and forked_at_step: the
task conductor.fork() copied it from and the step it was forked from (NULL: not a fork).
code_version: the code version the run started on (claim's code_versions; NULL: none
recorded). graph_id: the graph it belongs to (enqueue_graph; NULL: none).
Raises QC203 when the task does not exist.$$;

create or replace function conductor.list_tasks(
  status    text default null,
  queue     text default null,
  kind      text default null,
  before_id bigint default null,
  "limit"   integer default 50
) returns setof conductor.tasks
  language plpgsql stable
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_status conductor.task_status;
begin
  v_status := conductor._task_status(list_tasks.status);
  if list_tasks."limit" is null or list_tasks."limit" < 0 or list_tasks."limit" > 10000 then
    raise exception 'invalid limit %: between 0 and 10000', list_tasks."limit" using errcode = 'QC106';
  end if;

  return query
  select t.* from conductor.tasks t
   where (v_status is null or t.status = v_status)
     and (list_tasks.queue is null or t.queue = list_tasks.queue)
     and (list_tasks.kind is null or t.kind = list_tasks.kind)
     and (list_tasks.before_id is null or t.id < list_tasks.before_id)
   order by t.id desc
   limit list_tasks."limit";
end
$$;

comment on function conductor.list_tasks(text, text, text, bigint, integer) is
$$Tasks newest first, filtered by status, queue and kind (NULL: any); pass the last id
seen as before_id for the next page. Raises QC105 for an unknown status, QC106 for a
limit outside 0..10000.$$;

revoke execute on function conductor.list_attempts(bigint[]) from public;
grant execute on function conductor.list_attempts(bigint[]) to conductor_client, conductor_worker, conductor_admin;
revoke execute on function conductor.get_task(bigint) from public;
revoke execute on function conductor.list_tasks(text, text, text, bigint, integer) from public;
grant execute on function conductor.get_task(bigint) to conductor_client, conductor_worker, conductor_admin;
grant execute on function conductor.list_tasks(text, text, text, bigint, integer) to conductor_client, conductor_worker, conductor_admin;

commit;
