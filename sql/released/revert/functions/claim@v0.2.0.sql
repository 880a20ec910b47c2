-- Revert conductor:functions/claim from pg: back to its v0.1.0 body
--
-- The v0.1.0 deploy script (functions/claim@v0.1.0.sql), with create or replace, and
-- search_path pinned to pg_catalog, pg_temp instead of '': going back to v0.1.0's
-- bodies does not reopen the pg_temp escalation (issue 14).
--
-- conductor.claim(worker_id, queues, max_tasks, lease): the front of the hot
-- path. In one statement it picks up to max_tasks ready tasks (higher priority
-- first, then earlier due time, then lower id), leases them to the worker and
-- records an attempt row for each; the attempt's id is the fencing token for
-- every later call about that claim.
--
-- Locks: the picked task rows, FOR UPDATE SKIP LOCKED, so concurrent claimers
-- never wait on each other and never get the same task.
--
-- Concurrency keys (at most one running task per key; the others stay queued
-- in order and block nothing else): a first statement takes a transaction
-- advisory lock, without waiting, on each key it may claim; a second
-- statement, whose snapshot is newer than those locks, claims only tasks of
-- keys it locked and that have no running task, one per key. A claimer that
-- made a key's task running committed before releasing the key's lock, so the
-- next holder of the lock sees it running. This needs READ COMMITTED (a
-- snapshot per statement), which claim checks when keys are involved.
--   Lock order: key advisory locks, then task rows.
--
-- Index use: one queue -> tasks_ready_by_queue (equality, then the claim
-- order); several or all queues -> tasks_ready (the claim order) with a filter.
-- Picking is one small statement per case (one queue, several, or with
-- concurrency keys), so each has a plan of its own. The pick from several or
-- all queues, or with keys, is planned afresh on every call
-- (force_custom_plan): which index serves best depends on the queues' sizes,
-- or the position's bounds must reach the index, and a cached generic plan
-- made while the table was empty or small stayed on the connection as it
-- grew, 5-200x slower (bench/stale_plans.py).
-- The rest has one right plan whatever the sizes, so it is planned once per
-- connection: the pick from one queue, from its head or from a remembered
-- position (conductor._pick_queue, one statement per stage, written so that
-- tasks_ready_by_queue is the only plan without a sort), the key probe
-- (conductor._claim_keys) and the lease, the attempt rows and the answer
-- (conductor._lease, one statement shared by all cases) run with
-- force_generic_plan and with sequential scans, hash and merge joins disabled,
-- so a plan made on empty tables cannot turn into a scan later
-- (sql/tests/claim/cached_plans_stay_on_index_probes.sql; the pick's index:
-- sql/tests/claim/pick_plan_stays_on_queue_index.sql). Planning them on
-- every call was a fifth of the database's time in bench (d).
--
-- Pinned xmin horizon (a long transaction elsewhere): the index entries of
-- every task claimed since cannot be removed, and they sit at the head of the
-- ready index, where each claim's scan starts and must step over them all:
-- claims get slower with every task claimed while the horizon is held. So
-- when two full scans in a row take longer than conductor.claim_slow_scan
-- (default 1 ms), the session remembers the position after the last task it
-- claimed (setting conductor.claim_position) and, until the next full scan,
-- claims in three
-- steps, each only if the previous found too few: tasks of higher priority
-- than the position's; tasks after the position at its priority (stepping
-- over only what others claimed since); a full scan. The next full scan comes
-- after 2 s, or 20 times the last full scan's time if longer (at most 5 % of
-- the claims' time goes to full scans however long they get). What the
-- position passes over (a task returned to the queue behind it, or one whose
-- enqueueing transaction began earlier) waits for that full scan. After a fast
-- full scan nothing is remembered: claims keep the exact order. A first slow
-- scan only leaves a strike ('<queues>|slow'): on a busy or virtual machine a
-- backend paused for a few milliseconds makes one scan slow (measured: a bare
-- round trip's p99 is 4-9 ms on the 2-vCPU bench VM), and taking that for dead
-- entries cost a second, per-call planned pick per claim for the next 2 s.
-- Not used for claims with concurrency keys.

begin;

-- 0.2.0's signatures (kinds) go first: create or replace below recreates v0.1.0's.
drop function conductor.claim(text, text[], integer, interval, text[]);
drop function conductor._pick_queue(text, integer, timestamptz, integer, integer, timestamptz, bigint, bigint[], text[], text[]);
drop function conductor._claim_keys(text[], integer, timestamptz, text[], text[], text[]);
drop function conductor._check_scope(text[], text[]);
drop function conductor._claim_tokens(bigint[], timestamptz);
drop function conductor._claim_controls(text[], text[], timestamptz);
drop function conductor._tokens(double precision, double precision, double precision, timestamptz, timestamptz);
drop function conductor._claim_remember(text, bigint, text, bigint[], double precision);
drop function conductor._claim_position(text);

-- conductor.claimed_task, what claim returns, is created by functions/claim@v0.1.0
-- and unchanged since.

create or replace function conductor._claim_slow_scan() returns interval
  language sql stable
as $$
  select coalesce(nullif(pg_catalog.current_setting('conductor.claim_slow_scan', true), '')::interval,
                  interval '1 millisecond')
$$;

comment on function conductor._claim_slow_scan() is
$$How long a full claim scan may take before the session claims from a remembered position
(setting conductor.claim_slow_scan, default 1 ms).$$;

revoke execute on function conductor._claim_slow_scan() from public;

-- The keys a claim may use: those of the first ready keyed tasks whose key has
-- no running task, each locked for the transaction (without waiting: a key
-- another claimer holds is skipped). NULL when there are none, the common case.
create or replace function conductor._claim_keys(queues text[], max_tasks integer, claimed_at timestamptz)
  returns text[]
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
  set plan_cache_mode = force_generic_plan
  set enable_seqscan = off
  set enable_hashjoin = off
  set enable_mergejoin = off
as $$
begin
  return (
  select pg_catalog.array_agg(distinct k.concurrency_key)
    from (
      select t.concurrency_key from conductor.tasks t
       where t.status = 'queued' and t.concurrency_key is not null and t.run_at <= _claim_keys.claimed_at
         and (_claim_keys.queues is null or t.queue = any (_claim_keys.queues))
         and not exists (select from conductor.tasks r
                          where r.concurrency_key = t.concurrency_key and r.status = 'running')
       order by t.priority desc, t.run_at, t.id
       limit _claim_keys.max_tasks
    ) k
   where pg_catalog.pg_try_advisory_xact_lock(
           pg_catalog.hashtextextended('conductor:concurrency:' || k.concurrency_key, 0)));
end
$$;

comment on function conductor._claim_keys(text[], integer, timestamptz) is
$$claim's key probe: the concurrency keys of the first max_tasks ready keyed tasks of queues
whose key has no running task, each locked with pg_try_advisory_xact_lock (a key held by another
claimer is left out). NULL when there are none. Planned once per connection (index probes only).$$;

revoke execute on function conductor._claim_keys(text[], integer, timestamptz) from public;

-- The pick from one queue: up to max_tasks ready unkeyed tasks of the queue,
-- in claim order, locked. Stage 3 (the default) scans the queue from its
-- head, leaving out taken_ids; from a remembered position, stage 1 takes the
-- tasks of higher priority than the position's and stage 2 the ones after it
-- at its priority (see the map at the top). One statement per stage, so that
-- each has a plan whose index bounds are the stage's, planned once per
-- connection: planned per call, the position's picks cost 0.2 ms of planning
-- each under a pinned horizon, where every claim makes them.
--
-- Every statement's one right index is tasks_ready_by_queue, and none leaves
-- the planner another: queue is matched as queue = any(array[q]), which the
-- planner does not treat as a constant, and the rows are ordered by queue
-- first, so only that index yields the order; sorts, sequential and bitmap
-- scans are off. With queue = q, a plan made while one queue filled the table
-- read tasks_ready and filtered on queue, stepping through every other
-- queue's tasks once there were more (sql/tests/claim/pick_plan_stays_on_queue_index.sql,
-- both parts). The btree scan takes the array key as an equality, so the
-- priority and position bounds still end the scan; a range (queue >= q and
-- queue <= q), which pinned the index as well, did not: a key on a later
-- column ends the scan only when every earlier column has an equality key,
-- and with it each position pick read the rest of the queue's index ((d) at
-- 0.27 of raw, reverted in a00379f).
create or replace function conductor._pick_queue(
  queue          text,
  max_tasks      integer,
  claimed_at     timestamptz,
  stage          integer default 3,
  after_priority integer default null,
  after_run_at   timestamptz default null,
  after_id       bigint default null,
  taken_ids      bigint[] default null,
  out ids        bigint[],
  out seen_ids   bigint[])
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
  set plan_cache_mode = force_generic_plan
  set enable_seqscan = off
  set enable_bitmapscan = off
  set enable_sort = off
as $$
begin
  if _pick_queue.stage = 1 then
    select pg_catalog.array_agg(p.id), pg_catalog.array_agg(p.id) filter (where p.started_at is not null)
      into _pick_queue.ids, _pick_queue.seen_ids
      from (select t.id, t.started_at from conductor.tasks t
             where t.status = 'queued' and t.queue = any (array[_pick_queue.queue])
               and t.priority > _pick_queue.after_priority
               and t.run_at <= _pick_queue.claimed_at and t.concurrency_key is null
             order by t.queue, t.priority desc, t.run_at, t.id
             limit _pick_queue.max_tasks
               for update skip locked) p;
  elsif _pick_queue.stage = 2 then
    select pg_catalog.array_agg(p.id), pg_catalog.array_agg(p.id) filter (where p.started_at is not null)
      into _pick_queue.ids, _pick_queue.seen_ids
      from (select t.id, t.started_at from conductor.tasks t
             where t.status = 'queued' and t.queue = any (array[_pick_queue.queue])
               and t.priority = _pick_queue.after_priority
               and (t.run_at, t.id) > (_pick_queue.after_run_at, _pick_queue.after_id)
               and t.run_at <= _pick_queue.claimed_at and t.concurrency_key is null
             order by t.queue, t.priority desc, t.run_at, t.id
             limit _pick_queue.max_tasks
               for update skip locked) p;
  else
    select pg_catalog.array_agg(p.id), pg_catalog.array_agg(p.id) filter (where p.started_at is not null)
      into _pick_queue.ids, _pick_queue.seen_ids
      from (select t.id, t.started_at from conductor.tasks t
             where t.status = 'queued' and t.queue = any (array[_pick_queue.queue])
               and t.run_at <= _pick_queue.claimed_at and t.concurrency_key is null
               and (_pick_queue.taken_ids is null or t.id <> all (_pick_queue.taken_ids))
             order by t.queue, t.priority desc, t.run_at, t.id
             limit _pick_queue.max_tasks
               for update skip locked) p;
  end if;
end
$$;

comment on function conductor._pick_queue(text, integer, timestamptz, integer, integer, timestamptz, bigint, bigint[]) is
$$claim's pick from one queue: locks up to max_tasks ready unkeyed tasks of queue due by
claimed_at, FOR UPDATE SKIP LOCKED, and returns their ids in claim order and, of those, the ones
claimed before (seen_ids). stage 3 (default): from the queue's head, leaving out taken_ids; from
a remembered position, stage 1: priority above after_priority; stage 2: at after_priority,
after (after_run_at, after_id). Planned once per connection, always a scan of
tasks_ready_by_queue bounded by the stage.$$;

revoke execute on function conductor._pick_queue(text, integer, timestamptz, integer, integer, timestamptz, bigint, bigint[]) from public;

create or replace function conductor._lease(
  task_ids       bigint[],
  seen_ids       bigint[],
  worker_id      text,
  lease_until    timestamptz,
  claimed_at     timestamptz
) returns setof conductor.claimed_task
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
  set plan_cache_mode = force_generic_plan
  set enable_seqscan = off
  set enable_hashjoin = off
  set enable_mergejoin = off
as $$
begin
  return query
  with claimed as (
    update conductor.tasks t
       set status = 'running',
           attempt = t.attempt + 1,
           attempt_id = pg_catalog.nextval('conductor.attempts_id_seq'),
           claimed_by = _lease.worker_id,
           lease_expires_at = _lease.lease_until,
           started_at = coalesce(t.started_at, _lease.claimed_at)
     where t.id = any (_lease.task_ids)
    returning t.*
  ), recorded as (
    insert into conductor.attempts (id, task_id, attempt, worker_id, host, pid, claimed_at)
    select c.attempt_id, c.id, c.attempt, _lease.worker_id, w.host, w.pid, _lease.claimed_at
      from claimed c
      left join conductor.workers w on w.id = _lease.worker_id
  )
  select c.id, c.attempt_id, c.kind, c.queue, c.payload, c.priority, c.attempt,
         c.max_attempts, c.recoveries, c.parent_id, c.root_id, c.run_at,
         c.enqueued_at, c.lease_expires_at,
         -- a task never claimed before has no steps: skip the lookup
         case when c.id = any (_lease.seen_ids)
              then coalesce((select pg_catalog.jsonb_object_agg(s.name, s.result)
                               from conductor.steps s where s.task_id = c.id), '{}')
              else '{}' end
    from claimed c
   order by c.priority desc, c.run_at, c.id;
end
$$;

comment on function conductor._lease(bigint[], bigint[], text, timestamptz, timestamptz) is
$$claim's second half: leases the picked task_ids (locked by the caller) to worker_id until
lease_until, writes an attempt row for each (host and pid from conductor.workers) and returns
them in claim order with their steps (looked up only for seen_ids, tasks claimed before).
Planned once per connection (primary-key probes only).$$;

revoke execute on function conductor._lease(bigint[], bigint[], text, timestamptz, timestamptz) from public;

create or replace function conductor.claim(
  worker_id text,
  queues    text[] default null,
  max_tasks integer default 1,
  lease     interval default interval '60 seconds'
) returns setof conductor.claimed_task
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
  set plan_cache_mode = force_custom_plan
as $$
declare
  v_now timestamptz := conductor.now();
  v_one_queue text;
  v_keys text[];
  v_ids bigint[];
  v_seen bigint[];
  v_scope text;
  v_position text[];
  v_remembered text;
  v_after_priority integer;
  v_after_run_at timestamptz;
  v_after_id bigint;
  v_until double precision;
  v_stage integer := 3;  -- 1: above the position's priority, 2: after the position, 3: full scan
  v_started timestamptz;
  v_more bigint[];
  v_more_seen bigint[];
  v_strike boolean := false;
  v_stage_last bigint[];  -- the last task each stage picked (each pick is in claim order)
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

  v_keys := conductor._claim_keys(claim.queues, claim.max_tasks, v_now);
  if v_keys is not null
     and pg_catalog.current_setting('transaction_isolation') <> 'read committed' then
    raise exception 'claim needs READ COMMITTED to honour concurrency keys, not %',
      pg_catalog.current_setting('transaction_isolation')
      using errcode = 'QC106';
  end if;

  -- Pick, in claim order, and lock the tasks (one statement per case, each a
  -- plan of its own): the plain cases scan one ready index; with keys, the
  -- tasks of locked keys that have nothing running come in too, one per key.
  if v_keys is null then
    -- Under a pinned xmin horizon, see the map: a remembered position, else the full scan.
    v_scope := coalesce(pg_catalog.array_to_string(claim.queues, ','), '*');
    v_position := pg_catalog.string_to_array(pg_catalog.current_setting('conductor.claim_position', true), '|');
    -- a position of other queues, or not of claim's making (set by hand), is ignored
    if v_position[1] = v_scope
       and pg_catalog.array_to_string(v_position[2:5], '|') ~ '^-?[0-9]+\|[0-9]+\|[0-9]+\|[0-9]+(\.[0-9]+)?$'
       and v_position[5]::double precision > extract(epoch from pg_catalog.clock_timestamp()) then
      v_after_priority := v_position[2]::integer;
      v_after_run_at := timestamptz 'epoch' + v_position[3]::bigint * interval '1 microsecond';
      v_after_id := v_position[4]::bigint;
      v_until := v_position[5]::double precision;
    end if;
    if v_until is not null then
      v_stage := 1;
    end if;
    loop
      v_started := pg_catalog.clock_timestamp();
      if v_one_queue is not null then
        select p.ids, p.seen_ids into v_more, v_more_seen
          from conductor._pick_queue(v_one_queue, claim.max_tasks - coalesce(pg_catalog.cardinality(v_ids), 0),
                                     v_now, v_stage, v_after_priority, v_after_run_at, v_after_id, v_ids) p;
      else
        select pg_catalog.array_agg(p.id), pg_catalog.array_agg(p.id) filter (where p.started_at is not null)
          into v_more, v_more_seen
          from (select t.id, t.started_at from conductor.tasks t
                 where t.status = 'queued' and t.run_at <= v_now
                   and (claim.queues is null or t.queue = any (claim.queues))
                   and t.concurrency_key is null
                   and case v_stage
                         when 1 then t.priority > v_after_priority
                         when 2 then t.priority = v_after_priority
                                     and (t.run_at, t.id) > (v_after_run_at, v_after_id)
                         else true end
                   and (v_ids is null or t.id <> all (v_ids))
                 order by t.priority desc, t.run_at, t.id
                 limit claim.max_tasks - coalesce(pg_catalog.cardinality(v_ids), 0)
                   for update skip locked) p;
      end if;
      v_ids := v_ids || v_more;
      v_seen := v_seen || v_more_seen;
      v_stage_last := v_stage_last || v_more[pg_catalog.cardinality(v_more)];
      if v_stage = 3 then
        -- a slow full scan means dead index entries at the head: remember the
        -- position, and scan in full again after 2 s or 20 times this scan's time.
        -- Only when the scan before was slow too (a position or a strike of this
        -- scope): one slow scan alone is as likely the machine pausing this backend.
        v_until := case when pg_catalog.clock_timestamp() - v_started >= conductor._claim_slow_scan()
                        then extract(epoch from pg_catalog.clock_timestamp())
                             + greatest(2, 20 * extract(epoch from pg_catalog.clock_timestamp() - v_started)) end;
        if v_until is not null and v_position[1] is distinct from v_scope then
          v_until := null;
          v_strike := true;
        end if;
        exit;
      end if;
      exit when pg_catalog.cardinality(v_ids) = claim.max_tasks;
      v_stage := v_stage + 1;
    end loop;
    if v_until is not null and v_ids is not null then
      select pg_catalog.concat_ws('|', v_scope, t.priority,
               (extract(epoch from t.run_at) * 1000000)::bigint, t.id, v_until)
        into v_remembered
        from conductor.tasks t
       where t.id = any (v_stage_last)  -- not v_ids: 0.6 ms for a claim of 250
       order by t.priority, t.run_at desc, t.id desc  -- the last claimed, in claim order
       limit 1;
      perform pg_catalog.set_config('conductor.claim_position', v_remembered, false);
    elsif v_strike then
      perform pg_catalog.set_config('conductor.claim_position', v_scope || '|slow', false);
    elsif pg_catalog.cardinality(v_position) > 0 and v_until is null then
      perform pg_catalog.set_config('conductor.claim_position', '', false);
    end if;
  else
    select pg_catalog.array_agg(p.id), pg_catalog.array_agg(p.id) filter (where p.started_at is not null)
      into v_ids, v_seen
      from (select p.id, p.started_at,
                   pg_catalog.row_number() over (partition by p.concurrency_key
                                                 order by p.priority desc, p.run_at, p.id) as n,
                   p.concurrency_key
              from (select t.id, t.started_at, t.concurrency_key, t.priority, t.run_at
                      from conductor.tasks t
                     where t.status = 'queued' and t.run_at <= v_now
                       and (claim.queues is null or t.queue = any (claim.queues))
                       and (t.concurrency_key is null
                            or (t.concurrency_key = any (v_keys)
                                and not exists (select from conductor.tasks r
                                                 where r.concurrency_key = t.concurrency_key
                                                   and r.status = 'running')))
                     order by t.priority desc, t.run_at, t.id
                     limit claim.max_tasks
                       for update skip locked) p) p
     where p.concurrency_key is null or p.n = 1;  -- one task per key
  end if;
  if v_ids is null then
    return;
  end if;

  return query select * from conductor._lease(v_ids, v_seen, claim.worker_id, v_now + claim.lease, v_now);
end
$$;

comment on function conductor.claim(text, text[], integer, interval) is
$$Leases up to max_tasks ready tasks to worker_id and returns them, highest priority
first, then earliest run_at, then lowest id. queues NULL means every queue.
Each row's attempt_id is the fencing token for heartbeat, complete, fail and release.
steps: the task's checkpoints so far ({name: result}), so a resumed run skips them.
The lease (default 60 s) must be extended by heartbeat before it expires, or reap()
takes the task back. Returns no rows when nothing is ready.
At most one task per concurrency_key runs at a time: a keyed task is claimed only while
no task of its key is running, one per key per claim; the others wait in order and block
no other key or queue.
Raises QC106 for a missing worker_id, negative max_tasks or a non-positive lease (or a
claim of keyed tasks outside READ COMMITTED), QC104 for an empty queue list.
FOR UPDATE SKIP LOCKED: any number of callers at once, none waits, no task goes to two.
When two full scans in a row are slow (over the setting conductor.claim_slow_scan, default
1 ms: dead index entries under a pinned xmin horizon), the session claims from where it stopped
(setting conductor.claim_position): higher priorities still first, but a task returned to
the queue behind that point waits for the next full scan (2 s, or 20x the last one's time).$$;

revoke execute on function conductor.claim(text, text[], integer, interval) from public;
grant execute on function conductor.claim(text, text[], integer, interval) to conductor_worker, conductor_admin;

commit;
