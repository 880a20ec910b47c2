-- Revert conductor:functions/heartbeat from pg: back to its v0.1.0 body
--
-- The v0.1.0 deploy script (functions/heartbeat@v0.1.0.sql), with create or replace, and
-- search_path pinned to pg_catalog, pg_temp instead of '': going back to v0.1.0's
-- bodies does not reopen the pg_temp escalation (issue 14).
--
-- conductor.heartbeat(worker_id, attempt_ids, lease): one call a beat for all
-- of a worker's claims. Extends the lease of each attempt that still holds its
-- task and answers, for each that does not, why: 'cancelled' (stop it),
-- 'finished' (this worker already reported it: a report crossed the beat), or
-- 'lost' (the lease expired and the task was taken back; discard its result).
--
-- Plans: made afresh each call (plan_cache_mode = force_custom_plan). A cached
-- generic plan made while conductor.tasks was empty stayed on the connection
-- as the table grew, up to 200x slower (bench/stale_plans.py).
--
-- Locks: the held task rows (a lease-only update, usually HOT), then the
-- worker's row. Any number of workers at once.

begin;

-- new in 0.2.0 (the time limit's error, which reap() writes)
drop function conductor._timed_out_error(interval);
drop function conductor._seconds(interval);

create or replace function conductor.heartbeat(
  worker_id   text,
  attempt_ids bigint[],
  lease       interval default interval '60 seconds'
) returns table (attempt_id bigint, task_id bigint, state text)
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
  set plan_cache_mode = force_custom_plan
as $$
declare
  v_now timestamptz := conductor.now();
begin
  if heartbeat.worker_id is null or heartbeat.worker_id = '' then
    raise exception 'heartbeat needs a worker_id' using errcode = 'QC106';
  end if;
  if heartbeat.lease is null or heartbeat.lease <= interval '0' then
    raise exception 'invalid lease %: it must be positive', coalesce(heartbeat.lease::text, 'NULL')
      using errcode = 'QC106';
  end if;

  return query
  with given as materialized (
    -- attempts by primary key first, then their tasks by primary key (status::text
    -- keeps the planner off tasks_running; see conductor._complete)
    select a.id, a.task_id from conductor.attempts a
     where a.id = any (heartbeat.attempt_ids) and a.worker_id = heartbeat.worker_id
  ), extended as (
    update conductor.tasks t
       set lease_expires_at = v_now + heartbeat.lease
      from given
     where t.id = given.task_id
       and t.attempt_id = given.id
       and t.status::text = 'running'
    returning t.attempt_id
  )
  select given.id, a.task_id,
         case when a.outcome = 'cancelled' then 'cancelled'
              when a.outcome in ('succeeded', 'failed', 'released', 'suspended')
                   and a.worker_id = heartbeat.worker_id then 'finished'
              else 'lost' end
    from pg_catalog.unnest(heartbeat.attempt_ids) as given(id)
    left join conductor.attempts a on a.id = given.id
   where given.id is not null
     and not exists (select from extended e where e.attempt_id = given.id);

  update conductor.workers w set last_seen_at = v_now where w.id = heartbeat.worker_id;
  if not found then
    -- reap() forgot a worker that went quiet for long: it is back, so it shows again
    insert into conductor.workers as w (id, started_at, last_seen_at)
    values (heartbeat.worker_id, v_now, v_now)
    on conflict on constraint workers_pkey do update set last_seen_at = excluded.last_seen_at;
  end if;
end
$$;

comment on function conductor.heartbeat(text, bigint[], interval) is
$$Extends to now + lease (default 60 s) the lease of every attempt in attempt_ids that
still holds its task, and marks the worker seen. Returns one row per attempt that no
longer holds its task: state 'cancelled' (the task was cancelled: stop the handler),
'finished' (the attempt already reported complete, fail, release or suspend: nothing to
do) or 'lost' (taken back after its lease expired, unknown, or another worker's: discard
the result).
An empty answer means every lease was extended. A worker that reap() forgot after a
long silence is recorded again (without its details until it registers). Raises QC106
for a missing worker_id or a non-positive lease. Any number of callers at once.$$;

revoke execute on function conductor.heartbeat(text, bigint[], interval) from public;
grant execute on function conductor.heartbeat(text, bigint[], interval) to conductor_worker, conductor_admin;

commit;
