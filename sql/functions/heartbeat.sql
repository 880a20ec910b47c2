-- Deploy conductor:functions/heartbeat to pg
-- (reworked after v0.2.0; the released body is sql/released/functions/heartbeat@v0.2.0.sql)
--
-- conductor.heartbeat(worker_id, attempt_ids, lease): one call a beat for all
-- of a worker's claims. Extends the lease of each attempt that still holds its
-- task (lease: positive, at most conductor.settings.max_lease) to now + lease,
-- but never past the attempt's deadline (claimed_at + the task's timeout), and
-- answers, for each it did not extend, why: 'cancelled' (stop it), 'timed_out'
-- (its deadline passed: stop it and report it with fail(timed_out => true);
-- reap() fails it if the worker does not; answered again once it failed so,
-- attempts.timed_out), 'finished' (this worker already reported it: a report
-- crossed the beat; nothing to do), or 'lost' (the lease expired and the task
-- was taken back; stop it, discard its result).
--
--   conductor._seconds(interval)          seconds as Python's f"{n:g}" prints them
--   conductor._timed_out_error(timeout)   'timed out after N s': the error of an
--                                         attempt past its deadline, written by
--                                         fail(timed_out => true) and reap() only
--
-- Never waiting on a row another session holds. A client's cancel() or
-- emit_event() in a transaction it leaves open locks task rows; a beat that
-- waited for one would let every other lease of the worker run out. So the held
-- tasks are locked FOR NO KEY UPDATE SKIP LOCKED before their leases are
-- extended: a row another transaction holds is skipped, its lease not extended
-- this beat, and it is not answered (it is neither cancelled nor lost yet; the
-- next beat tries again, and answers 'cancelled' once such a cancel committed).
-- The same for the worker's own row (marked seen): a session holding it (another
-- login's beat under this worker_id, left open) costs one 'seen', not the beat.
-- lock_timeout = 5 s bounds any other wait (55P03: the beat is sent again).
--
-- Answers come from a second statement, and so from a snapshot taken after the
-- update: a report of the worker that committed meanwhile (a row skipped because
-- that report held it) shows as 'finished', never as 'lost'; one still in flight
-- shows the attempt open, still holding its task: skipped, not answered.
--
-- Plans: made afresh each call (plan_cache_mode = force_custom_plan). A cached
-- generic plan made while conductor.tasks was empty stayed on the connection
-- as the table grew, up to 200x slower (bench/stale_plans.py). A fresh plan
-- still reads the statistics, which after a bulk delete under a long
-- transaction say the tables are empty over pages full of rows: each scan is an
-- index scan bounded by the ids given (`id = any (...)`) and no statement joins
-- two tables, so no plan walks a whole primary key as the outer side of a join
-- (as conductor._complete; sql/tests/complete_many/
-- plans_made_on_emptied_tables_read_only_the_named_rows.sql).
--
-- Locks: the held task rows (SKIP LOCKED, then a lease-only update, usually
-- HOT), then the worker's row (SKIP LOCKED). Any number of workers at once.

begin;
set local role conductor_owner;

-- An interval in seconds as C's and Python's %g print a number (6 significant
-- digits, no trailing zeros, an exponent below 1e-4 and from 1e6 on): how the
-- engine's messages say a time (a worker writes none of them).
create or replace function conductor._seconds(value interval) returns text
  language plpgsql immutable
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_n numeric := extract(epoch from _seconds.value);
  v_e integer;
  v_r numeric;
  v_text text;
begin
  if v_n is null then
    return null;
  elsif v_n = 0 then
    return '0';
  end if;
  -- the exponent of the value once rounded to 6 significant digits
  v_e := pg_catalog.floor(pg_catalog.log(pg_catalog.abs(v_n)))::integer;
  v_r := pg_catalog.round(v_n, 5 - v_e);
  if pg_catalog.abs(v_r) >= 10::numeric ^ (v_e + 1) then
    v_e := v_e + 1;
    v_r := pg_catalog.round(v_n, 5 - v_e);
  end if;
  if v_e < -4 or v_e >= 6 then
    v_text := pg_catalog.round(v_r / 10::numeric ^ v_e, 5)::text;
  else
    v_text := v_r::text;
  end if;
  if pg_catalog.strpos(v_text, '.') > 0 then
    v_text := pg_catalog.rtrim(pg_catalog.rtrim(v_text, '0'), '.');
  end if;
  if v_e < -4 or v_e >= 6 then
    v_text := v_text || 'e' || case when v_e < 0 then '-' else '+' end
              || pg_catalog.lpad(pg_catalog.abs(v_e)::text, 2, '0');
  end if;
  return v_text;
end
$$;

comment on function conductor._seconds(interval) is
$$An interval as a number of seconds printed like Python's f"{n:g}": 2 s -> '2', 1.5 s ->
'1.5', 5 minutes -> '300', 30 days -> '2.592e+06'. NULL for NULL.$$;

revoke execute on function conductor._seconds(interval) from public;

-- The error of an attempt that reached its time limit, written by the engine only
-- (fail(timed_out => true), reap()): a worker reports the reason, never this text.
create or replace function conductor._timed_out_error(timeout interval) returns text
  language sql immutable
  set search_path = pg_catalog, pg_temp
as $$
  select case when _timed_out_error.timeout is null then 'timed out'
              else pg_catalog.format('timed out after %s s', conductor._seconds(_timed_out_error.timeout)) end
$$;

comment on function conductor._timed_out_error(interval) is
$$The error of an attempt that reached its time limit: 'timed out after N s', N the timeout in
seconds as conductor._seconds prints it ('timed out' without a timeout). The one writer of
that text: fail(timed_out => true) and reap() store it; nobody compares it (heartbeat reads
attempts.timed_out).$$;

revoke execute on function conductor._timed_out_error(interval) from public;

create or replace function conductor.heartbeat(
  worker_id   text,
  attempt_ids bigint[],
  lease       interval default interval '60 seconds'
) returns table (attempt_id bigint, task_id bigint, state text)
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
  set plan_cache_mode = force_custom_plan
  set lock_timeout = '5s'
as $$
declare
  v_now timestamptz := conductor.now();
  v_max_lease interval;
  v_extended bigint[];
  v_attempts bigint[];    -- the caller's own attempts among attempt_ids
  v_tasks bigint[];       -- their tasks
  v_claimed timestamptz[];  -- their claimed_at, in step with v_attempts
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
  -- another login's worker id keeps none of its leases alive (a dead worker's would never be reaped)
  perform conductor._check_worker_owner(heartbeat.worker_id);

  -- The caller's attempts by primary key, then their tasks by primary key and
  -- fenced by attempt_id; an attempt's claimed_at is found by its position. Each
  -- scan is an index scan bounded by ids and no statement joins two tables (see
  -- the map). status::text keeps the planner off tasks_running (conductor._complete).
  select pg_catalog.array_agg(a.id), pg_catalog.array_agg(a.task_id), pg_catalog.array_agg(a.claimed_at)
    into v_attempts, v_tasks, v_claimed
    from conductor.attempts a
   where a.id = any (heartbeat.attempt_ids) and a.worker_id = heartbeat.worker_id;

  with held as materialized (
    -- a row another transaction holds is skipped, never waited for (see the map)
    select t.id
      from conductor.tasks t
     where t.id = any (v_tasks)
       and t.attempt_id = any (v_attempts)
       and t.status::text = 'running'
       for no key update of t skip locked
  ), extended as (
    -- never past the deadline; an attempt at or past it is not extended
    update conductor.tasks t
       set lease_expires_at = least(v_now + heartbeat.lease,
                                    v_claimed[pg_catalog.array_position(v_attempts, t.attempt_id)] + t.timeout)
     where t.id = any (array(select h.id from held h))
       and t.attempt_id = any (v_attempts)
       and t.status::text = 'running'
       and (t.timeout is null or v_claimed[pg_catalog.array_position(v_attempts, t.attempt_id)] + t.timeout > v_now)
    returning t.attempt_id
  )
  select pg_catalog.array_agg(e.attempt_id) into v_extended from extended e;

  -- A new statement, a new snapshot: it sees the reports committed since (see the map).
  if pg_catalog.cardinality(v_extended) is distinct from pg_catalog.cardinality(heartbeat.attempt_ids) then
    return query
    select r.id, r.task_id, r.state
      from (select given.id, a.task_id,
                   case when a.outcome = 'cancelled' then 'cancelled'
                        -- past its deadline: still open, or failed as timed out (by reap(), which
                        -- runs at the deadline, likely before this beat)
                        when a.worker_id = heartbeat.worker_id and a.claimed_at + t.timeout <= v_now
                             and (a.outcome is null or (a.outcome = 'failed' and a.timed_out))
                          then 'timed_out'
                        when a.outcome in ('succeeded', 'failed', 'released', 'suspended')
                             and a.worker_id = heartbeat.worker_id then 'finished'
                        -- still held by this worker's attempt: its row was another
                        -- transaction's this beat (skipped): nothing to answer yet
                        when a.outcome is null and a.worker_id = heartbeat.worker_id
                             and t.attempt_id = a.id and t.status::text = 'running' then null
                        else 'lost' end as state
              from pg_catalog.unnest(heartbeat.attempt_ids) as given(id)
              -- each row a probe by primary key, planned apart (offset 0): no plan walks a table
              left join lateral (select x.id, x.task_id, x.outcome, x.worker_id, x.claimed_at, x.timed_out
                                   from conductor.attempts x where x.id = given.id offset 0) a on true
              left join lateral (select y.attempt_id, y.status, y.timeout
                                   from conductor.tasks y where y.id = a.task_id offset 0) t on true
             where given.id is not null
               and given.id <> all (coalesce(v_extended, '{}'))) r
     where r.state is not null;
  end if;

  update conductor.workers w set last_seen_at = v_now
   where w.id = (select x.id from conductor.workers x where x.id = heartbeat.worker_id
                    for no key update skip locked);
  if not found and not exists (select from conductor.workers x where x.id = heartbeat.worker_id) then
    -- reap() forgot a worker that went quiet for long: it is back, so it shows again
    insert into conductor.workers as w (id, started_at, last_seen_at, owner)
    values (heartbeat.worker_id, v_now, v_now, conductor._caller())
    on conflict on constraint workers_pkey do nothing;
  end if;
end
$$;

comment on function conductor.heartbeat(text, bigint[], interval) is
$$Extends to now + lease (default 60 s, at most conductor.settings.max_lease) the lease of
every attempt in attempt_ids that still holds its task, never past the attempt's deadline
(claimed_at + the task's timeout; none without a timeout), and marks the worker seen.
Returns one row per attempt it did not extend, with what the worker must do:
  'cancelled'  the task was cancelled: stop the handler; its outcome will not be stored
               (complete and fail answer it cancelled).
  'timed_out'  the attempt reached its deadline (its lease is not extended): stop the
               handler and report the attempt with fail(timed_out => true) (the engine
               writes the error, 'timed out after N s'); reap() fails it so if the
               worker does not (then fail answers the lease lost). Answered while the
               attempt is open and once it failed as timed out (attempts.timed_out: by
               reap(), or a crossing fail(timed_out => true) of the worker).
  'finished'   this attempt already reported (complete, complete_many, fail, release or
               suspend), perhaps in a report that crossed this beat: nothing to do, and
               nothing to report again; stop beating it.
  'lost'       the lease expired and the task was taken back (another attempt may run it),
               or the attempt is unknown or another worker's: stop the handler and
               discard its result.
Never waits on a row another transaction holds (a client's cancel or emit_event left open,
a report of the worker in flight): that attempt's lease is not extended this beat and it
is not answered; the next beat tries again. The same for the worker's row (then the worker
is not marked seen this beat). Never 'lost' for an attempt whose report committed before
the answers are read (from a snapshot after the update: 'finished'). An empty answer means
every lease was extended (some only to their deadline) or skipped so. A worker that reap()
forgot after a long silence is recorded again (without its details until it registers).
Raises QC106 for a missing worker_id or a lease not positive or over max_lease (the message
names it); 55P03 if any other lock is not granted within 5 s. Any number of callers at
once.
Raises QC208 when another login registered worker_id (its leases are not extended; an
admin may heartbeat any); the bare row it writes for an unregistered id is the caller's.$$;

revoke execute on function conductor.heartbeat(text, bigint[], interval) from public;
grant execute on function conductor.heartbeat(text, bigint[], interval) to conductor_worker, conductor_admin;

commit;
