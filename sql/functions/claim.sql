-- Deploy conductor:functions/claim to pg
--
-- conductor.claim(worker_id, queues, max_tasks, lease): the front of the hot
-- path. In one statement it picks up to max_tasks ready tasks (higher priority
-- first, then earlier due time, then lower id), leases them to the worker and
-- records an attempt row for each; the attempt's id is the fencing token for
-- every later call about that claim.
--
-- Locks: the picked task rows, FOR UPDATE SKIP LOCKED, so concurrent claimers
-- never wait on each other and never get the same task. Nothing else.
--
-- Index use: one queue -> tasks_ready_by_queue (equality, then the claim
-- order); several or all queues -> tasks_ready (the claim order) with a filter.
-- Both branches sit in one cached plan; a one-time filter on the parameter
-- runs only the branch that applies.

begin;

create function conductor.claim(
  worker_id text,
  queues    text[] default null,
  max_tasks integer default 1,
  lease     interval default interval '60 seconds'
) returns table (
  task_id          bigint,
  attempt_id       bigint,
  kind             text,
  queue            text,
  payload          jsonb,
  priority         integer,
  attempt          integer,
  max_attempts     integer,
  recoveries       integer,
  parent_id        bigint,
  root_id          bigint,
  run_at           timestamptz,
  enqueued_at      timestamptz,
  lease_expires_at timestamptz
)
  language plpgsql volatile
  security definer
  set search_path = ''
as $$
declare
  v_now timestamptz := conductor.now();
  v_one_queue text;
  v_host text;
  v_pid integer;
begin
  if claim.worker_id is null or claim.worker_id = '' then
    raise exception 'claim needs a worker_id' using errcode = 'QC106';
  end if;
  if claim.max_tasks is null or claim.max_tasks < 0 then
    raise exception 'invalid max_tasks %: it must be 0 or more', coalesce(claim.max_tasks::text, 'NULL')
      using errcode = 'QC106';
  end if;
  if claim.lease is null or claim.lease <= interval '0' then
    raise exception 'invalid lease %: it must be positive', coalesce(claim.lease::text, 'NULL')
      using errcode = 'QC106';
  end if;
  if claim.queues is not null
     and (pg_catalog.cardinality(claim.queues) = 0 or pg_catalog.array_position(claim.queues, null) is not null) then
    raise exception 'invalid queues %: name at least one queue, or pass NULL for every queue', claim.queues
      using errcode = 'QC104';
  end if;
  if claim.max_tasks = 0 then
    return;
  end if;

  if pg_catalog.cardinality(claim.queues) = 1 then
    v_one_queue := claim.queues[1];
  end if;

  select w.host, w.pid into v_host, v_pid from conductor.workers w where w.id = claim.worker_id;

  return query
  with picked as (
    select one.id from (
      select t.id from conductor.tasks t
       where t.status = 'queued' and t.run_at <= v_now and t.queue = v_one_queue
       order by t.priority desc, t.run_at, t.id
       limit claim.max_tasks
         for update skip locked
    ) one
    union all
    select several.id from (
      select t.id from conductor.tasks t
       where v_one_queue is null
         and t.status = 'queued' and t.run_at <= v_now
         and (claim.queues is null or t.queue = any (claim.queues))
       order by t.priority desc, t.run_at, t.id
       limit claim.max_tasks
         for update skip locked
    ) several
  ), claimed as (
    update conductor.tasks t
       set status = 'running',
           attempt = t.attempt + 1,
           attempt_id = pg_catalog.nextval('conductor.attempts_id_seq'),
           claimed_by = claim.worker_id,
           lease_expires_at = v_now + claim.lease,
           started_at = coalesce(t.started_at, v_now)
      from picked
     where t.id = picked.id
    returning t.*
  ), recorded as (
    insert into conductor.attempts (id, task_id, attempt, worker_id, host, pid, claimed_at)
    select c.attempt_id, c.id, c.attempt, claim.worker_id, v_host, v_pid, v_now
      from claimed c
  )
  select c.id, c.attempt_id, c.kind, c.queue, c.payload, c.priority, c.attempt,
         c.max_attempts, c.recoveries, c.parent_id, c.root_id, c.run_at,
         c.enqueued_at, c.lease_expires_at
    from claimed c
   order by c.priority desc, c.run_at, c.id;
end
$$;

comment on function conductor.claim(text, text[], integer, interval) is
$$Leases up to max_tasks ready tasks to worker_id and returns them, highest priority
first, then earliest run_at, then lowest id. queues NULL means every queue.
Each row's attempt_id is the fencing token for heartbeat, complete, fail and release.
The lease (default 60 s) must be extended by heartbeat before it expires, or reap()
takes the task back. Returns no rows when nothing is ready.
Raises QC106 for a missing worker_id, negative max_tasks or a non-positive lease,
QC104 for an empty queue list. FOR UPDATE SKIP LOCKED: any number of callers at once,
none waits, no task goes to two.$$;

revoke execute on function conductor.claim(text, text[], integer, interval) from public;
grant execute on function conductor.claim(text, text[], integer, interval) to conductor_worker, conductor_admin;

commit;
