-- Deploy conductor:functions/heartbeat to pg
--
-- conductor.heartbeat(worker_id, attempt_ids, lease): one call a beat for all
-- of a worker's claims. Extends the lease of each attempt that still holds its
-- task (lease: positive, at most conductor.settings.max_lease) and answers, for
-- each that does not, why: 'cancelled' (stop it), 'finished' (this worker
-- already reported it: a report crossed the beat; nothing to do), or 'lost'
-- (the lease expired and the task was taken back; stop it, discard its result).
--
-- Answers come from a second statement, and so from a snapshot taken after the
-- update: in READ COMMITTED an update that waits for a concurrent report
-- (complete_many, fail, ...) re-checks the row, sees it no longer held and skips
-- it, while a read in the same statement still sees the attempt running; it
-- would answer 'lost' for an attempt that had just finished. The second
-- statement sees every commit the update waited for.
--
-- Plans: made afresh each call (plan_cache_mode = force_custom_plan). A cached
-- generic plan made while conductor.tasks was empty stayed on the connection
-- as the table grew, up to 200x slower (bench/stale_plans.py).
--
-- Locks: the held task rows (a lease-only update, usually HOT), then the
-- worker's row. Any number of workers at once.

begin;
set local role conductor_owner;

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
  v_max_lease interval;
  v_extended bigint[];
begin
  if heartbeat.worker_id is null or heartbeat.worker_id = '' then
    raise exception 'heartbeat needs a worker_id' using errcode = 'QC106';
  end if;
  if heartbeat.lease is null or heartbeat.lease <= interval '0' then
    raise exception 'invalid lease %: it must be positive', coalesce(heartbeat.lease::text, 'NULL')
      using errcode = 'QC106';
  end if;
  select s.max_lease into v_max_lease from conductor.settings s where s.one;
  if heartbeat.lease > v_max_lease then
    raise exception 'invalid lease %: at most % (conductor.settings.max_lease)', heartbeat.lease, v_max_lease
      using errcode = 'QC106',
            hint = 'A long task keeps its lease by heartbeating; the lease is how long a lost worker''s task waits to be taken back.';
  end if;

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
  select pg_catalog.array_agg(e.attempt_id) into v_extended from extended e;

  -- A new statement, a new snapshot: it sees the reports the update waited for (see above).
  if pg_catalog.cardinality(v_extended) is distinct from pg_catalog.cardinality(heartbeat.attempt_ids) then
    return query
    select given.id, a.task_id,
           case when a.outcome = 'cancelled' then 'cancelled'
                when a.outcome in ('succeeded', 'failed', 'released', 'suspended')
                     and a.worker_id = heartbeat.worker_id then 'finished'
                else 'lost' end
      from pg_catalog.unnest(heartbeat.attempt_ids) as given(id)
      left join conductor.attempts a on a.id = given.id
     where given.id is not null
       and given.id <> all (coalesce(v_extended, '{}'));
  end if;

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
$$Extends to now + lease (default 60 s, at most conductor.settings.max_lease) the lease of
every attempt in attempt_ids that still holds its task, and marks the worker seen.
Returns one row per attempt that no longer holds its task, with what the worker must do:
  'cancelled'  the task was cancelled: stop the handler; its outcome will not be stored
               (complete and fail answer it cancelled).
  'finished'   this attempt already reported (complete, complete_many, fail, release or
               suspend), perhaps in a report that crossed this beat: nothing to do, and
               nothing to report again; stop beating it.
  'lost'       the lease expired and the task was taken back (another attempt may run it),
               or the attempt is unknown or another worker's: stop the handler and
               discard its result.
Never 'lost' for an attempt whose report committed while the beat waited for it: the
answers are read after the update, from a snapshot that sees that report ('finished').
An empty answer means every lease was extended. A worker that reap() forgot after a
long silence is recorded again (without its details until it registers). Raises QC106
for a missing worker_id or a lease not positive or over max_lease (the message names
it). Any number of callers at once.$$;

revoke execute on function conductor.heartbeat(text, bigint[], interval) from public;
grant execute on function conductor.heartbeat(text, bigint[], interval) to conductor_worker, conductor_admin;

commit;
