-- Deploy conductor:functions/reap to pg
-- (reworked after v0.2.0; the released body is sql/released/functions/reap@v0.2.0.sql)
--
-- The engine's upkeep, run by every worker's reaper (any number at once):
--
--   conductor.reap(stale_workers_after)   in order, one step function each
--   (conductor._reap_leases, _reap_waits, _reap_expired, _reap_unknown_kinds, _reap_stale; each
--   reads the clock and the settings itself, and is tested on its own):
--     1. _reap_leases(): expired leases. A task whose attempt reached its deadline (claimed_at
--        + the task's timeout) fails as conductor.fail(timed_out => true) would
--        fail it: error 'timed out after N s' (conductor._timed_out_error), the
--        attempt 'failed' and timed_out, retried after the backoff (conductor._backoff, the task's
--        policy, else its kind's) while attempts remain, else 'failed';
--        recoveries untouched, the attempt counts. Any other expired lease is a
--        lost worker, a recovery: the seed's rule, "a task whose worker dies
--        three times is marked dead instead of being tried again". The task
--        goes back to its queue with recoveries + 1, or is dead ("worker lost
--        N times") when that reaches max_recoveries (3 by default: the third
--        lost worker is final; 0 and 1: the first); its attempt is closed as
--        'lost' and does not count against max_attempts. Each recovery also
--        counts against its run (run_recoveries, under a key share lock of
--        the root's row, while the root is unfinished): "a run that still
--        hasn't finished after four recoveries is marked failed" (each task
--        taken back counts: a worker lost holding three tasks of a run counts
--        three). A run whose count reached settings.max_run_recoveries (4;
--        NULL: none) fails (_fail_run): the root 'failed', with an error
--        naming the count, its unfinished descendants cancelled (kept in
--        run_recoveries.stopped: retry of the root queues them again, with
--        fresh counts).
--     2. _reap_waits(): waits that reached their deadline: a sleep wakes; an event wait wakes
--        with {"timed_out": true} checkpointed; a wait for children ends the
--        task timed_out after cancelling its unfinished children. And pending
--        events (conductor.events.pending: new, maybe missed by a suspend that
--        overlapped the emit): their waiters are woken as emit_event wakes them
--        (_wake_event_waiters); a pass notes the horizon of an event it sees
--        first (the next transaction id) and clears pending once no other
--        transaction older than it runs and no waiter is left, in the same
--        pass if it can (functions/runs, the map, says why no wake-up is lost).
--     2b. _reap_expired(): expiry before start (issue 30, schema/expiry): a
--        queued task never started whose deadline to start (expires_at = its
--        due time + expires_in) has come ends 'expired', its error naming the
--        deadline; at most 1000 a call (conductor.task_deadlines, in deadline
--        order), the rest at the next reap. claim never starts such a task; a waiting
--        parent is woken (tasks_child_finished) and a waiting client told
--        (_notify_done), as for any finished task.
--     3. _reap_unknown_kinds(): the unknown-kind sweep, at most once per min(unknown_kind_after / 5,
--        1 minute) across all reapers (conductor.maintenance, compare-and-set):
--        a queued task due for unknown_kind_after is dead-lettered when a live
--        worker serves its queue but none has served its kind for that long
--        (see conductor._unserved). A typo's tasks die visibly; a rolling
--        deploy kills nothing (the newer workers serve the new kinds; a
--        stopped worker's kinds count as served for a while, in served_kinds);
--        tasks of a queue no live worker serves wait (nobody is there to say
--        the kind is unknown), and so do those of a paused queue (pause_queue:
--        its tasks stay as they are; paused is not unserved). Nothing when
--        unknown_kind_after is NULL.
--     4. _reap_stale(stale_workers_after): workers not seen for greatest(stale_workers_after, unknown_kind_after)
--        are forgotten (the sweep reads their last_seen_at until then) with
--        their sleeper marks, served_kinds rows older than unknown_kind_after,
--        the result waiters and bus subscriptions of sessions that are gone,
--        claim positions unused for stale_workers_after, and run_recoveries
--        rows whose root is gone, or finished without the limit failing it.
--
--   conductor.reap_report(stale_workers_after) runs the four steps, answering one row of
--        counts: leases_lost (the reclaims), leases_dead, leases_timed_out,
--        runs_failed, waits_ended, kinds_swept; conductor.reap() answers their
--        sum (a reclaim warrants a warning in a worker's log, a wait that ended
--        on time does not: a worker reads the report)
--   conductor._fail_run(root_id, recoveries, max)   fails a run at the limit
--   conductor._lock_tree(task_id)   a task and its unfinished descendants,
--        locked NOWAIT (55P03 when another transaction holds one)
--   conductor._serves(queues, kinds, roles, queue, kind)   THE rule of "a worker
--        can run a task" (it serves both the task's queue and its kind; NULL
--        queues or kinds: every one), read by _unserved and by _wait_reasons
--        (functions/waiting: why_waiting, waiting_reasons)
--   conductor._unserved(live_since)   the queued tasks no live worker can run,
--        per queue and kind, used by the sweep, stats().unrunnable and unrunnable()
--
--   conductor.next_wake()   when reap next has something to do, so a worker can
--        run it then rather than only every reap interval (durable sleeps wake on
--        time; a lease is never past its deadline, so time limits too)
--   conductor.next_due(queues, kinds)   the earliest run_at after now of a queued
--        task of those queues (paused ones left out), or the time a rate-limited
--        queue or kind holding ready tasks gets its next token, if earlier: how
--        long an idle worker may sleep
--
-- Compare-and-set: the expired rows are locked FOR UPDATE SKIP LOCKED and
-- re-checked on their latest version, so any number of reapers may run at once
-- and a late one never touches a task that finished, was heartbeated or was
-- reclaimed meanwhile. reap() waits for no lock that a client's transaction or a
-- session outside the engine can hold: task rows are taken SKIP LOCKED (the
-- expired ones, the roots of the lost ones, the waits past their deadline, the
-- waiters of pending events) or, for a tree it must change whole (a run at its
-- limit, a wait for children past its deadline), NOWAIT (_lock_tree), and what
-- it skipped is there for the next reap. Lock order, which is the steps' order:
--   1. (_reap_leases) the expired task rows, in id order; the roots of the lost
--      ones FOR KEY SHARE (only FOR UPDATE conflicts, which another reaper taking
--      the root back, a retry of the root or a deletion holds); then a run's
--      run_recoveries row (written only under a lock of the root's row: reapers,
--      which may share it and then take the run rows in root_id order, or retry,
--      FOR UPDATE); attempt rows; a run at its limit, its tree NOWAIT (children
--      before parents);
--   2. (_reap_waits) waiting task rows (children before parents: a timed-out wait
--      cancels the children first), steps, event rows;
--   2b. (_reap_expired) task_deadlines rows, then their task rows, both SKIP LOCKED
--      (a claim holding one at its deadline wins it, or loses it to the reaper:
--      never both), then a waiting parent's row (the child-finished trigger);
--   3. (_reap_unknown_kinds) the maintenance row, then the swept task rows, both
--      SKIP LOCKED (a sweep another reaper is running is not waited for);
--   4. (_reap_stale) run_recoveries rows SKIP LOCKED; the other rows it forgets
--      (workers, served_kinds, claim_positions, result_waiters, subscriptions)
--      are deleted as they are.
-- No advisory lock.

-- Cost of the sweep: it groups every queued task by queue and kind (a heap
-- read of the backlog: no index holds the kind), once per period, not per reap.

begin;
set local role conductor_owner;

-- The rule of "a worker can run a task", in one place: it serves the task's
-- queue (workers.queues NULL or holding it) and its kind (workers.kinds NULL or
-- holding it); a process that registered without the 'worker' role (a scheduler
-- only) runs nothing, whatever its kinds say (a row heartbeat re-created has no
-- roles and counts: it claims). queue or kind NULL: that one is not asked about.
create or replace function conductor._serves(queues text[], kinds text[], roles text[], queue text, kind text)
  returns boolean
  language sql immutable parallel safe
  set search_path = pg_catalog, pg_temp
as $$
  select (_serves.roles = '{}' or 'worker' = any (_serves.roles))
     and (_serves.queue is null or _serves.queues is null or _serves.queue = any (_serves.queues))
     and (_serves.kind is null or _serves.kinds is null or _serves.kind = any (_serves.kinds))
$$;

comment on function conductor._serves(text[], text[], text[], text, text) is
$$Whether a worker registered with queues, kinds and roles (conductor.workers) runs tasks of
queue and kind: it has the 'worker' role (or no roles: a row heartbeat re-created) and
serves both (its queues or kinds NULL: every one); queue or kind NULL is not asked about.
THE rule of who serves what, read by _unserved (reap's sweep, stats, unrunnable) and
_wait_reasons (why_waiting, waiting_reasons).$$;

revoke execute on function conductor._serves(text[], text[], text[], text, text) from public;

-- Live: seen at or after live_since. Per (queue, kind) of the
-- queued tasks (due or not) that no live worker can run (conductor._serves): how many, the
-- earliest run_at, whether a live worker serves the queue at all, whether one
-- serves the kind (on another queue), and when a worker (live or not, on any
-- queue) was last seen serving the kind, or one serving it deregistered
-- (conductor.served_kinds), whichever is later.
create or replace function conductor._unserved(live_since timestamptz)
  returns table (queue text, kind text, tasks bigint, oldest_run_at timestamptz,
                 queue_served boolean, kind_served boolean, kind_last_served timestamptz)
  language sql stable
  set search_path = pg_catalog, pg_temp
  -- the queued rows through the ready index (a bitmap scan): a sequential scan, which
  -- the planner takes once the backlog is a fair share of the table, reads the history
  set enable_seqscan = off
  set jit = off
as $$
  with live as materialized (
    select w.queues, w.kinds, w.roles from conductor.workers w
     where w.last_seen_at >= _unserved.live_since
       and conductor._serves(w.queues, w.kinds, w.roles, null, null)
  ), queued as (
    select t.queue, t.kind, pg_catalog.count(*) as tasks, pg_catalog.min(t.run_at) as oldest_run_at
      from conductor.tasks t
     where t.status = 'queued'
       -- a live worker of every queue and kind can run anything: nothing to read
       and not exists (select from live w where w.queues is null and w.kinds is null)
     group by t.queue, t.kind
  )
  select q.queue, q.kind, q.tasks, q.oldest_run_at,
         exists (select from live w where conductor._serves(w.queues, w.kinds, w.roles, q.queue, null)),
         exists (select from live w where conductor._serves(w.queues, w.kinds, w.roles, null, q.kind)),
         greatest((select pg_catalog.max(w.last_seen_at) from conductor.workers w
                    where conductor._serves(w.queues, w.kinds, w.roles, null, q.kind)),
                  (select s.last_served_at from conductor.served_kinds s where s.kind = q.kind))
    from queued q
   where not exists (select from live w where conductor._serves(w.queues, w.kinds, w.roles, q.queue, q.kind))
$$;

comment on function conductor._unserved(timestamptz) is
$$Per (queue, kind), the queued tasks that no worker seen since live_since can run (a worker
runs a task when it serves both its queue and its kind, conductor._serves): tasks, the
earliest run_at, queue_served (a live worker serves the queue), kind_served (a live worker
serves the kind, on another queue), kind_last_served (the latest last_seen_at of a worker
serving the kind, on any queue, or served_kinds row).
The one rule read by reap()'s unknown-kind sweep, stats().unrunnable and unrunnable().
Reads every queued task's heap row (no index holds the kind), found through the ready
index, never the finished history.$$;

revoke execute on function conductor._unserved(timestamptz) from public;

-- The unfinished tree under task_id (itself included), locked for no key update in
-- descending id order (children before parents), NOWAIT: raises 55P03 at once when
-- another transaction holds one of its rows. The reaper's way to lock a tree without
-- ever waiting (a row a client's open transaction holds cannot stall it).
create or replace function conductor._lock_tree(task_id bigint) returns bigint[]
  language sql volatile
  set search_path = pg_catalog, pg_temp
as $$
  with recursive tree as (
    select _lock_tree.task_id as id
    union all
    select c.id from conductor.tasks c join tree on c.parent_id = tree.id
  )
  select coalesce(pg_catalog.array_agg(l.id), '{}')
    from (select t.id from conductor.tasks t
           where t.id in (select tree.id from tree) and t.status = any (conductor.unfinished_statuses())
           order by t.id desc
             for no key update nowait) l
$$;

comment on function conductor._lock_tree(bigint) is
$$Locks task_id and every unfinished descendant (for no key update, descending id: children
before parents) and returns their ids; raises 55P03 (lock_not_available) at once, locking
nothing that stays, when another transaction holds one of them (NOWAIT). Called by reap()
inside a block that catches it: the tree is left for the next reap.$$;

-- "A run that still hasn't finished after four recoveries is marked failed": the root
-- fails with an error that says so, its unfinished descendants are cancelled (as
-- cancel() cancels: running ones learn it at their next heartbeat), and their ids are
-- kept in run_recoveries.stopped for retry of the root to queue them again.
create or replace function conductor._fail_run(root_id bigint, recoveries integer, max_recoveries integer)
  returns boolean
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_now timestamptz := conductor.now();
  v_tree bigint[];
  v_stopped bigint[];
  v_root conductor.tasks;
  v_error text;
begin
  begin
    v_tree := conductor._lock_tree(_fail_run.root_id);
  exception when lock_not_available then
    return false;  -- a row of the run is held: the next reap fails it
  end;
  select t.* into v_root from conductor.tasks t where t.id = _fail_run.root_id;
  if not found or v_root.status <> all (conductor.unfinished_statuses()) then
    return false;
  end if;
  v_stopped := array(select x from pg_catalog.unnest(v_tree) x where x <> _fail_run.root_id order by x);
  v_error := pg_catalog.format(
    'run failed: it had not finished after %s recoveries (workers lost while running its tasks; '
    'conductor.settings.max_run_recoveries is %s); %s unfinished task(s) of the run were cancelled',
    _fail_run.recoveries, _fail_run.max_recoveries, pg_catalog.cardinality(v_stopped));

  -- the root first: a descendant's end then finds it failed and wakes nothing
  update conductor.tasks t
     set status = 'failed', error = v_error, finished_at = v_now, lease_expires_at = null,
         wait_for = null, wait_event = null, wait_until = null, wait_step = null
   where t.id = _fail_run.root_id;
  update conductor.attempts a
     set outcome = 'cancelled', finished_at = v_now, error = v_error
   where a.id = v_root.attempt_id and a.outcome is null;
  -- each child's subtree in one statement (a parent before its children's trigger reads it)
  perform conductor.cancel(c.id)
     from conductor.tasks c
    where c.parent_id = _fail_run.root_id
    order by c.id desc;
  update conductor.run_recoveries r set stopped = v_stopped where r.root_id = _fail_run.root_id;
  perform conductor._notify_done(array[_fail_run.root_id]);
  return true;
end
$$;

comment on function conductor._fail_run(bigint, integer, integer) is
$$Fails the run of root_id for its recoveries (max_recoveries: the limit it reached): the root
ends 'failed' with an error naming both numbers, its running attempt (if any) 'cancelled';
every unfinished descendant is cancelled through conductor.cancel (error 'cancelled'; a
running one learns it at its next heartbeat); their ids go to run_recoveries.stopped.
Returns true when it did; false when the root is not unfinished, or another transaction
holds a row of the run (locked NOWAIT through _lock_tree: it never waits; reap tries again
next time). Called by reap() only.$$;

revoke execute on function conductor._lock_tree(bigint) from public;
revoke execute on function conductor._fail_run(bigint, integer, integer) from public;

-- Step 1 of reap_report: expired leases, timed out (a failure) or lost (a recovery), then
-- the runs whose recoveries reached the limit (the map, 1.).
create or replace function conductor._reap_leases()
  returns table (leases_lost integer, leases_dead integer, leases_timed_out integer, runs_failed integer)
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_now timestamptz := conductor.now();
  v_max_run integer;
  v_timed_out bigint[];
  v_lost bigint[];
  v_roots bigint[];
  v_reaped_ids bigint[];
  v_done bigint[];
  v_queues text[];
  v_queue text;
  v_run record;
begin
  select s.max_run_recoveries into v_max_run from conductor.settings s where s.one;
  runs_failed := 0;

  with expired as (
    select t.id, t.root_id,
           t.timeout is not null and a.claimed_at + t.timeout <= v_now as timed_out
      from conductor.tasks t
      join conductor.attempts a on a.id = t.attempt_id
     where t.status = 'running' and t.lease_expires_at < v_now
     order by t.id
       for update of t skip locked
  )
  select coalesce(pg_catalog.array_agg(e.id) filter (where e.timed_out), '{}'),
         coalesce(pg_catalog.array_agg(e.id) filter (where not e.timed_out), '{}'),
         coalesce(pg_catalog.array_agg(distinct e.root_id) filter (where not e.timed_out), '{}')
    into v_timed_out, v_lost, v_roots
    from expired e;

  -- a recovery counts against its run, while the root is unfinished, under a key share
  -- lock of the root's row (every writer of a run's run_recoveries row holds a lock of
  -- it), SKIP LOCKED: workers' and clients' locks of the root do not conflict (FOR NO KEY
  -- UPDATE, FOR SHARE); a root held FOR UPDATE (another reaper taking it back, a retry)
  -- leaves its lost tasks for the next reap
  if pg_catalog.cardinality(v_lost) > 0 then
    select coalesce(pg_catalog.array_agg(r.id), '{}') into v_roots
      from (select r.id from conductor.tasks r
             where r.id = any (v_roots)
             order by r.id desc
               for key share skip locked) r;
    select coalesce(pg_catalog.array_agg(t.id), '{}') into v_lost
      from conductor.tasks t
     where t.id = any (v_lost) and t.root_id = any (v_roots);
    insert into conductor.run_recoveries as r (root_id, recoveries)
    select t.root_id, pg_catalog.count(*)::integer
      from conductor.tasks t
      join conductor.tasks root on root.id = t.root_id
     where t.id = any (v_lost) and root.status = any (conductor.unfinished_statuses())
     group by t.root_id
     order by t.root_id
    on conflict (root_id) do update set recoveries = r.recoveries + excluded.recoveries;
  end if;

  with expired as (
    select t.id, t.attempt_id, t.kind, t.id = any (v_timed_out) as timed_out
      from conductor.tasks t
     where t.id = any (v_timed_out || v_lost)
  ), reaped as (
    update conductor.tasks t
       set status = case when e.timed_out and t.attempt < t.max_attempts then 'queued'
                         when e.timed_out then 'failed'
                         -- the max_recoveries-th lost worker is final (3: the third)
                         when t.recoveries + 1 >= t.max_recoveries then 'dead'
                         else 'queued' end::conductor.task_status,
           recoveries = t.recoveries + case when e.timed_out then 0 else 1 end,
           attempt = t.attempt - case when e.timed_out then 0 else 1 end,
           -- a retry after the backoff, as conductor.fail computes it
           run_at = case when e.timed_out and t.attempt < t.max_attempts
                         then v_now + conductor._backoff(t.id, t.attempt,
                                                         coalesce(t.backoff_base, k.backoff_base),
                                                         coalesce(t.backoff_factor, k.backoff_factor),
                                                         coalesce(t.backoff_max, k.backoff_max))
                         else t.run_at end,
           lease_expires_at = null,
           -- back in its queue it names no worker (the attempt row keeps who ran it); a
           -- task that ends (dead, failed) keeps the last one
           claimed_by = case when (e.timed_out and t.attempt < t.max_attempts)
                               or (not e.timed_out and t.recoveries + 1 < t.max_recoveries)
                             then null else t.claimed_by end,
           error = case when e.timed_out then conductor._timed_out_error(t.timeout)
                        when t.recoveries + 1 >= t.max_recoveries
                        then pg_catalog.format('worker lost %s times', t.recoveries + 1)
                        else t.error end,
           finished_at = case when e.timed_out and t.attempt < t.max_attempts then null
                              when e.timed_out or t.recoveries + 1 >= t.max_recoveries then v_now end
      from expired e
      left join conductor.kinds k on k.kind = e.kind
     where t.id = e.id
    returning t.id, t.attempt_id, t.queue, t.status, e.timed_out, t.error
  ), closed as (
    update conductor.attempts a
       set outcome = case when r.timed_out then 'failed' else 'lost' end,
           timed_out = r.timed_out,
           finished_at = v_now,
           error = case when r.timed_out then r.error
                        else pg_catalog.format('lease expired at %s; worker %s presumed lost',
                                               v_now, a.worker_id) end
      from reaped r
     where a.id = r.attempt_id
  )
  select pg_catalog.count(*) filter (where not r.timed_out)::integer,
         pg_catalog.count(*) filter (where not r.timed_out and r.status = 'dead')::integer,
         pg_catalog.count(*) filter (where r.timed_out)::integer,
         -- a task back in its queue, due now or later (a retry after its backoff):
         -- a sleeping worker recomputes its wake-up, as after conductor.fail
         pg_catalog.array_agg(distinct r.queue) filter (where r.status = 'queued'),
         pg_catalog.array_agg(r.id)
    into leases_lost, leases_dead, leases_timed_out, v_queues, v_reaped_ids
    from reaped r;

  foreach v_queue in array coalesce(v_queues, '{}') loop
    perform conductor._notify_queue(v_queue);
  end loop;
  select pg_catalog.array_agg(t.id) into v_done
    from conductor.tasks t
   where t.id = any (v_reaped_ids) and t.status in ('dead', 'failed');
  perform conductor._notify_done(v_done);

  -- runs whose recoveries reached the limit while unfinished fail (this reap's, and any
  -- an earlier reap could not lock); a run another transaction holds a row of waits
  if v_max_run is not null
     and exists (select from conductor.run_recoveries r where r.recoveries >= v_max_run and r.stopped is null) then
    for v_run in
      select r.root_id, r.recoveries from conductor.run_recoveries r
        join conductor.tasks t on t.id = r.root_id
       where r.recoveries >= v_max_run and r.stopped is null
         and t.status = any (conductor.unfinished_statuses())
       order by r.root_id desc
    loop
      if conductor._fail_run(v_run.root_id, v_run.recoveries, v_max_run) then
        runs_failed := runs_failed + 1;
      end if;
    end loop;
  end if;
  return next;
end
$$;

comment on function conductor._reap_leases() is
$$Step 1 of reap_report: takes back every running task whose lease expired (locked FOR UPDATE
SKIP LOCKED, in id order). Past its time limit (claimed_at + timeout) the attempt failed
('timed out after N s'): the task is queued again after the backoff while attempts remain,
else 'failed'. Otherwise the worker is lost: recoveries + 1 (queued again, or dead 'worker
lost N times' at max_recoveries), the attempt closed 'lost', the recovery counted against
its run under a key share lock of the root (SKIP LOCKED: a root held FOR UPDATE leaves its
tasks for the next reap). Then fails (_fail_run) every unfinished run whose recoveries
reached settings.max_run_recoveries. Notifies the queues of requeued tasks and the waiters
of finished ones. Returns one row: leases_lost, leases_dead (of those), leases_timed_out,
runs_failed. Waits on no lock; any number at once. Called by reap_report only.$$;

revoke execute on function conductor._reap_leases() from public;

-- Step 2 of reap_report: waits that reached their deadline, and the waiters of pending
-- events (the map, 2.).
create or replace function conductor._reap_waits() returns integer
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_now timestamptz := conductor.now();
  v_waits integer := 0;
  v_task record;
  v_event record;
begin
  -- sleeps and event waits that reached their deadline wake
  for v_task in
    select t.id, t.wait_for, t.wait_event from conductor.tasks t
     where t.status = 'waiting' and t.wait_until <= v_now and t.wait_for in ('sleep', 'event')
     order by t.id desc
       for no key update skip locked
  loop
    perform conductor._wake(v_task.id,
      case when v_task.wait_for = 'event'
           then pg_catalog.jsonb_build_object('event', v_task.wait_event, 'timed_out', true) end);
    v_waits := v_waits + 1;
  end loop;

  -- pending events: wake the waiters an emit may have missed (a suspend of the event
  -- that had read before the emit committed, or a waiter the emit skipped, locked), as
  -- emit_event wakes them; then, in one statement, note the horizon of those seen for the
  -- first time (the next transaction id) and clear pending where no other transaction
  -- older than the horizon runs and no waiter is left (functions/runs, the map)
  for v_event in
    select e.name from conductor.events e
     where e.pending
       and exists (select from conductor.tasks t
                    where t.status = 'waiting' and t.wait_for = 'event' and t.wait_event = e.name)
     order by e.name
       for no key update of e skip locked
  loop
    v_waits := v_waits + conductor._wake_event_waiters(v_event.name);
  end loop;
  if exists (select from conductor.events e where e.pending) then
    with snap as (
      select pg_catalog.pg_current_snapshot() as s
    ), marks as (
      select e.name, e.pending_horizon is null as unseen, h.horizon,
             -- this transaction's own xid is not in xip: its writes are visible to it
             not exists (select from pg_catalog.pg_snapshot_xip(snap.s) x where x < h.horizon)
             and not exists (select from conductor.tasks t
                              where t.status = 'waiting' and t.wait_for = 'event' and t.wait_event = e.name)
             as settled
        from conductor.events e
       cross join snap
       cross join lateral (select coalesce(e.pending_horizon, pg_catalog.pg_snapshot_xmax(snap.s)) as horizon) h
       where e.pending
         for no key update of e skip locked
    )
    update conductor.events e
       set pending = not m.settled,
           pending_horizon = case when m.settled then null else m.horizon end
      from marks m
     where e.name = m.name and (m.settled or m.unseen);
  end if;

  -- waits for children past their deadline: the children are cancelled first
  -- (children before parents), then the task ends timed_out; a child's end
  -- does not wake a parent whose deadline passed. The tree is locked NOWAIT first:
  -- one that another transaction holds a row of is ended by the next reap
  for v_task in
    select t.id, t.wait_for, t.wait_until from conductor.tasks t
     where t.status = 'waiting' and t.wait_until <= v_now
       and t.wait_for in ('children_all', 'children_any')
     order by t.id desc
  loop
    begin
      perform conductor._lock_tree(v_task.id);
    exception when lock_not_available then
      continue;
    end;
    perform conductor.cancel(c.id)
       from conductor.tasks c
      where c.parent_id = v_task.id and c.status = any (conductor.unfinished_statuses())
      order by c.id desc;
    update conductor.tasks t
       set status = 'timed_out', finished_at = v_now,
           error = pg_catalog.format('waited for its children past its deadline %s', v_task.wait_until),
           wait_for = null, wait_event = null, wait_until = null, wait_step = null
     where t.id = v_task.id and t.status = 'waiting' and t.wait_until <= v_now;
    if found then
      perform conductor._notify_done(array[v_task.id]);
      v_waits := v_waits + 1;
    end if;
  end loop;
  return v_waits;
end
$$;

comment on function conductor._reap_waits() is
$$Step 2 of reap_report: ends the waits that reached their deadline and wakes the missed
waiters of pending events. A sleep is queued again; an event wait too, with {"event",
"timed_out": true} as its outcome (rows taken FOR NO KEY UPDATE SKIP LOCKED, descending id).
The waiters of each pending event (a suspend that overlapped the emit, a waiter the emit
skipped) are woken with the event as emit_event wakes them (events SKIP LOCKED, in name
order); an event seen for the first time gets its horizon (the next transaction id) and
pending is cleared once no transaction older than it runs and no waiter is left. A wait for
children past its deadline cancels its unfinished children first, then ends timed_out; its
tree is locked NOWAIT (_lock_tree), and one another transaction holds a row of is left for
the next reap. Returns how many waits it ended or woke. Waits on no lock; any number at
once. Called by reap_report only.$$;

revoke execute on function conductor._reap_waits() from public;

-- Step 2b of reap_report: expiry before start (the map, 2b.). A queued task whose
-- deadline to start has come, never started (claim clears expires_at), ends
-- 'expired'. Compare-and-set: the deadline rows and the task rows are locked
-- SKIP LOCKED and the tasks re-checked on their latest version (a claim that
-- started one, or a reaper that ended it, meanwhile: left alone); a batch of
-- 1000 a call, from conductor.task_deadlines in deadline order, so a backlog of
-- expired tasks costs each reap a bounded statement.
create or replace function conductor._reap_expired() returns integer
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_now timestamptz := conductor.now();
  v_due bigint[];
  v_held bigint[];
  v_expired bigint[];
begin
  -- the deadlines that came, earliest first; another reaper's are skipped
  v_due := array(select d.task_id from conductor.task_deadlines d
                  where d.expires_at <= v_now
                  order by d.expires_at
                  limit 1000
                    for update skip locked);
  if pg_catalog.cardinality(v_due) = 0 then
    return 0;
  end if;
  -- their tasks, but a row a claim (or anyone) holds: that one is decided at the next reap
  v_held := array(select t.id from conductor.tasks t where t.id = any (v_due) order by t.id for update skip locked);
  with ended as (
    update conductor.tasks t
       set status = 'expired', finished_at = v_now,
           error = conductor._expired_error(t.expires_at, t.expires_in)
     where t.id = any (v_held)
       and t.status = 'queued' and t.expires_at <= v_now  -- never started: claim clears expires_at
    returning t.id
  )
  select pg_catalog.array_agg(e.id) into v_expired from ended e;
  -- done with: the tasks decided here, and the ones gone (pruned); a deadline a task
  -- still waits for (set later by retry or a change of run_at) follows the task
  delete from conductor.task_deadlines d
   where d.task_id = any (v_due)
     and (d.task_id = any (v_held) or not exists (select from conductor.tasks t where t.id = d.task_id))
     and not exists (select from conductor.tasks t
                      where t.id = d.task_id and t.status = 'queued' and t.expires_at > v_now);
  update conductor.task_deadlines d
     set expires_at = t.expires_at
    from conductor.tasks t
   where d.task_id = any (v_held) and t.id = d.task_id and t.status = 'queued' and t.expires_at > v_now;
  perform conductor._notify_done(v_expired);
  return coalesce(pg_catalog.cardinality(v_expired), 0);
end
$$;

comment on function conductor._reap_expired() is
$$Step 2b of reap_report: reads at most 1000 rows of conductor.task_deadlines whose time
came, earliest first, and their tasks, both FOR UPDATE SKIP LOCKED; ends 'expired'
(finished_at now, error from conductor._expired_error naming the deadline) each of those
tasks still queued and never started (tasks.expires_at, which claim clears, past too), and
deletes the rows it dealt with (a task it held, or one gone), moving a row whose task
waits for a later deadline to it; a task another transaction holds (a claim starting it) is
left for the next reap. Wakes a waiting parent (tasks_child_finished) and the clients
waiting for the results (_notify_done). Returns how many it ended. Called by reap_report
only.$$;

revoke execute on function conductor._reap_expired() from public;

-- The one text of an expired task's error, written by the engine alone.
create or replace function conductor._expired_error(expires_at timestamptz, expires_in interval) returns text
  language plpgsql immutable
  set search_path = pg_catalog, pg_temp
as $$
begin
  return pg_catalog.format('expired: not started by its deadline %s (expires_in %s after it was due)',
                           pg_catalog.to_char(_expired_error.expires_at at time zone 'UTC',
                                              'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
                           _expired_error.expires_in);
end
$$;

comment on function conductor._expired_error(timestamptz, interval) is
$$The error of a task that expired before it started: 'expired: not started by its deadline
<expires_at, ISO 8601 in UTC> (expires_in <interval> after it was due)'.$$;

revoke execute on function conductor._expired_error(timestamptz, interval) from public;

-- Step 3 of reap_report: the unknown-kind sweep, once per period across all reapers (the
-- map, 3.): the one that moves unknown_kinds_swept_at sweeps (a clock set back, as tests
-- do, sweeps too).
create or replace function conductor._reap_unknown_kinds() returns integer
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_now timestamptz := conductor.now();
  v_unknown_after interval;
  v_swept bigint[];
begin
  select s.unknown_kind_after into v_unknown_after from conductor.settings s where s.one;
  if v_unknown_after is null then
    return 0;
  end if;
  update conductor.maintenance m
     set unknown_kinds_swept_at = v_now
   where m.one in (select x.one from conductor.maintenance x
                    where x.unknown_kinds_swept_at is null
                       or x.unknown_kinds_swept_at <= v_now - least(v_unknown_after / 5, interval '1 minute')
                       or x.unknown_kinds_swept_at > v_now
                      for update skip locked);
  if not found then
    return 0;
  end if;
  with doomed as (
    select t.id from conductor._unserved(v_now - v_unknown_after) u
      join conductor.tasks t on t.queue = u.queue and t.kind = u.kind
     where u.queue_served
       and (u.kind_last_served is null or u.kind_last_served < v_now - v_unknown_after)
       -- a paused queue's tasks stay as they are (nobody claims them: not unknown)
       and not exists (select from conductor.paused_queues p where p.queue = u.queue)
       and t.status = 'queued' and t.run_at <= v_now - v_unknown_after
     order by t.id
       for update of t skip locked
  ), swept as (
    update conductor.tasks t
       set status = 'dead', finished_at = v_now,
           error = pg_catalog.format(
             'no live worker has served kind %s for %s s (conductor.settings.unknown_kind_after): unknown kind?',
             conductor._echo(t.kind), conductor._seconds(v_unknown_after))
      from doomed d
     where t.id = d.id
    returning t.id
  )
  select pg_catalog.array_agg(w.id) into v_swept from swept w;
  perform conductor._notify_done(v_swept);
  return coalesce(pg_catalog.cardinality(v_swept), 0);
end
$$;

comment on function conductor._reap_unknown_kinds() is
$$Step 3 of reap_report: at most once per min(unknown_kind_after / 5, 1 minute) across all
reapers (the maintenance row, moved compare-and-set, SKIP LOCKED: a sweep another reaper
runs is not waited for), dead-letters each queued task due for at least
settings.unknown_kind_after whose queue a live worker serves but whose kind none has served
for that long (_unserved; never a paused queue's), its error naming the kind; the swept
rows are taken FOR UPDATE SKIP LOCKED in id order. Returns how many it dead-lettered: 0
when unknown_kind_after is NULL or another reaper swept within the period. Called by
reap_report only.$$;

revoke execute on function conductor._reap_unknown_kinds() from public;

-- Step 4 of reap_report: forget what is gone (the map, 4.).
create or replace function conductor._reap_stale(stale_workers_after interval) returns void
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_now timestamptz := conductor.now();
  v_unknown_after interval;
begin
  select s.unknown_kind_after into v_unknown_after from conductor.settings s where s.one;
  -- workers (kept while the sweep may still read them) and served kinds
  delete from conductor.workers w
   where w.last_seen_at < v_now - greatest(_reap_stale.stale_workers_after, v_unknown_after);
  delete from conductor.served_kinds s
   where s.last_served_at < v_now - coalesce(v_unknown_after, _reap_stale.stale_workers_after);
  -- claim positions unused for stale_workers_after: a worker that died or stopped while its
  -- scans were slow (a live claimer replaces or deletes its row at each full scan); their
  -- until is epoch seconds of the real clock, as claim writes it
  if exists (select from conductor.claim_positions) then
    delete from conductor.claim_positions p
     where p.until < extract(epoch from pg_catalog.clock_timestamp() - _reap_stale.stale_workers_after);
  end if;
  -- run counts no longer needed: the root is gone, or finished without the limit failing
  -- the run (a failed one keeps its row, stopped, until its root is retried or deleted)
  if exists (select from conductor.run_recoveries) then
    delete from conductor.run_recoveries r
     where r.root_id in (select x.root_id from conductor.run_recoveries x
                           left join conductor.tasks t on t.id = x.root_id
                          where t.id is null
                             or (x.stopped is null and t.status <> all (conductor.unfinished_statuses()))
                            for update of x skip locked);
  end if;
  -- result waiters and bus subscriptions whose session is gone (a client killed while waiting)
  if exists (select from conductor.result_waiters) then
    delete from conductor.result_waiters w
     where not exists (select from pg_catalog.pg_stat_activity a where a.pid = w.pid);
  end if;
  if exists (select from conductor.subscriptions) then
    delete from conductor.subscriptions s
     where not exists (select from pg_catalog.pg_stat_activity a where a.pid = s.pid);
  end if;
  -- the buckets of per-key rate limits that are full again (schema/rate_keys): a
  -- missing row is a full bucket, so idle keys leave no rows
  if exists (select from conductor.rate_key_buckets) then
    perform conductor._forget_rate_keys(10000);
  end if;
end
$$;

-- The per-key buckets (conductor.rate_key_buckets) refilled to their burst by now,
-- or whose limit is gone or no longer per key: at most max_rows, the ones a claim
-- holds passed over (SKIP LOCKED), each re-checked under its lock. Forgetting a
-- full bucket changes nothing: the next claim that needs it makes it full.
create or replace function conductor._forget_rate_keys(max_rows integer) returns integer
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_now timestamptz := conductor.now();
  v_count integer;
begin
  delete from conductor.rate_key_buckets b
   where b.ctid = any (array(
           select x.ctid from conductor.rate_key_buckets x
             left join conductor.rate_limits r on r.scope = x.scope and r.name = x.name and r.per_key
            where r.name is null
               or conductor._tokens(r.per_second, r.burst, x.tokens, x.refilled_at, v_now) >= r.burst
            limit _forget_rate_keys.max_rows
              for update of x skip locked));
  get diagnostics v_count = row_count;
  return v_count;
end
$$;

comment on function conductor._forget_rate_keys(integer) is
$$Deletes at most max_rows rows of conductor.rate_key_buckets that are full at
conductor.now() (refilled to their limit's burst) or whose per-key limit is gone, passing
over rows a claim holds (SKIP LOCKED); returns how many. A missing row is a full bucket
(claim inserts it full), so nothing a claim may start changes. Called by reap() (step 4).$$;

revoke execute on function conductor._forget_rate_keys(integer) from public;

comment on function conductor._reap_stale(interval) is
$$Step 4 of reap_report: deletes workers rows not seen for greatest(stale_workers_after,
settings.unknown_kind_after) (their sleepers rows go with them), served_kinds rows older
than unknown_kind_after (else stale_workers_after), claim_positions rows unused for
stale_workers_after (real clock), run_recoveries rows whose root is gone or finished
without the limit failing it (SKIP LOCKED), and result_waiters and subscriptions rows of
sessions that ended. Returns nothing. Called by reap_report only.$$;

revoke execute on function conductor._reap_stale(interval) from public;

-- The steps, in the lock order of the map
create or replace function conductor.reap_report(stale_workers_after interval default interval '15 minutes')
  returns table (leases_lost integer, leases_dead integer, leases_timed_out integer, runs_failed integer,
                 waits_ended integer, kinds_swept integer, tasks_expired integer)
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
begin
  select l.leases_lost, l.leases_dead, l.leases_timed_out, l.runs_failed
    into leases_lost, leases_dead, leases_timed_out, runs_failed
    from conductor._reap_leases() l;
  waits_ended := conductor._reap_waits();
  tasks_expired := conductor._reap_expired();
  kinds_swept := conductor._reap_unknown_kinds();
  perform conductor._reap_stale(reap_report.stale_workers_after);
  return next;
end
$$;

-- The total, for callers that only log a count (v0.2.0's shape; the Node worker)
create or replace function conductor.reap(stale_workers_after interval default interval '15 minutes')
  returns integer
  language sql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
  select r.leases_lost + r.leases_timed_out + r.runs_failed + r.waits_ended + r.kinds_swept + r.tasks_expired
    from conductor.reap_report(reap.stale_workers_after) r
$$;

comment on function conductor.reap(interval) is
$$conductor.reap_report(stale_workers_after), answering the sum of its counts but
leases_dead (those are among leases_lost): how many tasks it took back, woke, ended or
dead-lettered or expired. A caller that logs what it took back reads reap_report, to tell a lost
worker's lease (a reclaim, worth a warning) from a wait that ended on time.$$;

comment on function conductor.reap_report(interval) is
$$Takes back every running task whose lease expired. An attempt that reached its time limit
(claimed_at + the task's timeout) failed: attempt outcome 'failed', error 'timed out after
N s'; the task is queued again after the backoff while attempts remain (max_attempts),
else 'failed', as conductor.fail does; recoveries untouched. Otherwise the worker is
presumed lost, a recovery: the task is queued again with recoveries + 1, or dead ('worker
lost N times') when recoveries reaches max_recoveries (3 by default: the third lost worker
is final; 0 and 1 make the first final; a task stored by v0.2.0 reads its max_recoveries
so too: its last recovery comes one loss earlier than under v0.2.0); the attempt is closed
as 'lost'. Each recovery counts against its run while the run's root is unfinished
(conductor.run_recoveries, under a key share lock of the root's row: a lost task whose root
another transaction holds FOR UPDATE, as a reaper taking the root back does, is taken back
by the next reap); a run whose count reaches
conductor.settings.max_run_recoveries (4; NULL: no limit) ends: its root 'failed' with an
error naming the count, its unfinished descendants cancelled (retry of the root queues the
run again with fresh counts). A run another transaction holds a row of is failed by the
next reap.
Ends the waits that reached their deadline: sleeps and event waits are queued again (an
event wait with {"event", "timed_out": true} as its outcome); a wait for children ends
timed_out and its unfinished children are cancelled (when another transaction holds a row
of that tree, at the next reap). Ends 'expired' each queued task never started whose
deadline to start (expires_at: its due time + expires_in) has come, at most 1000 a call,
its error naming the deadline. Wakes the waiters of pending events (a suspend that
overlapped the emit, a waiter the emit skipped) with the event, as emit_event does, and
clears pending once every transaction that could have missed the event has ended.
At most once per min(unknown_kind_after / 5, 1 minute) across all reapers, dead-letters
(status 'dead', error naming the kind) each queued task due for at least
conductor.settings.unknown_kind_after (5 minutes; NULL: never) whose queue a live worker
serves (seen within unknown_kind_after) but whose kind none has served for that long
(workers.kinds, and served_kinds for workers that deregistered); never a task of a paused
queue.
Deletes workers rows not seen for greatest(stale_workers_after (15 min),
unknown_kind_after) with their sleepers rows, served_kinds rows older than
unknown_kind_after, result_waiters and subscriptions rows of sessions that ended,
claim_positions rows unused for stale_workers_after (a worker that stopped while its
scans were slow), and run_recoveries rows no longer needed. Returns one row of counts:
leases_lost (expired leases of lost workers: the reclaims, queued again or dead),
leases_dead (of those, the ones marked dead), leases_timed_out (attempts past their time
limit, failed), runs_failed (runs failed at max_run_recoveries), waits_ended (sleeps and
event waits woken at their deadline, waiters of pending events woken, waits for children
ended timed_out), kinds_swept (tasks dead-lettered for an unknown kind) and tasks_expired
(queued tasks ended 'expired' past their deadline to start). Compare-and-set with SKIP LOCKED
(NOWAIT for a whole tree): safe to run from every worker at once; a late reaper never
touches a task that finished or was reclaimed; it never waits for a lock a client's open
transaction or a session outside the engine can hold.$$;

create or replace function conductor.next_wake() returns timestamptz
  language sql stable
  security definer
  set search_path = pg_catalog, pg_temp
as $$
  select least((select pg_catalog.min(t.wait_until) from conductor.tasks t where t.status = 'waiting'),
                (select pg_catalog.min(t.lease_expires_at) from conductor.tasks t where t.status = 'running'),
                -- a deadline to start (task_deadlines_due: one probe)
                (select pg_catalog.min(d.expires_at) from conductor.task_deadlines d))
$$;

comment on function conductor.next_wake() is
$$The earliest time reap() will have something to do (a wait's deadline, a lease's expiry,
a queued task's deadline to start), or NULL when nothing waits, runs or can expire. A worker runs reap() then, rather than only every
reap interval, so durable sleeps wake on time.$$;

-- How long an idle worker may sleep: the earliest run_at after now of a queued
-- task of its queues. Index probes only, however big the backlog: per queue,
-- per distinct priority (a loose index scan over tasks_ready_by_queue, one
-- probe per priority), the first entry past now at that priority; with queues
-- NULL the queues come from the same index, one probe each. Tasks due now are
-- not its business (the worker claims them). kinds: the first 100 entries past
-- now of each priority are looked at for one of those kinds; when none is,
-- the earliest of any kind answers (an early wake is harmless: the worker
-- finds nothing to claim and asks again). Planned once per connection, on
-- tasks_ready_by_queue only (queue matched as = any(array[q]) and rows
-- ordered by queue first, as conductor._pick_queue does; sorts and
-- sequential and bitmap scans off). Measured with 100k queued tasks on 4 queues
-- of 3 priorities (and 300k finished): 2-3 ms for every queue, with kinds.
-- Paused queues are left out (their tasks are not claimed when due). Rate
-- limits (conductor.rate_limits, usually empty): a bucket of the worker's
-- queues or kinds that holds no whole token now gets one at now + (1 -
-- tokens) / per_second (conductor._tokens); that time answers when it is
-- earlier and the first 1000 ready tasks of the bucket's queue (of the
-- worker's queues, for a kind) hold one the worker could start on it, or are
-- all 1000 of other kinds or queues (undecided: an early wake is harmless).
create or replace function conductor.next_due(queues text[] default null, kinds text[] default null)
  returns timestamptz
  language plpgsql stable
  security definer
  set search_path = pg_catalog, pg_temp
  set plan_cache_mode = force_generic_plan
  set enable_seqscan = off
  set enable_bitmapscan = off
  set enable_sort = off
  set jit = off
as $$
declare
  v_now timestamptz := conductor.now();
  v_i integer := 0;
  v_queue text;
  v_priority integer;
  v_task record;
  v_first timestamptz;
  v_due timestamptz;
  v_next timestamptz;
  v_paused text[] := (select pg_catalog.array_agg(p.queue) from conductor.paused_queues p);
  v_bucket record;
  v_at timestamptz;
  v_read bigint;
  v_startable boolean;
begin
  if next_due.queues is not null or next_due.kinds is not null then
    perform conductor._check_scope(next_due.queues, next_due.kinds);
    perform conductor._check_queue_names(next_due.queues);
  end if;
  loop
    -- the next queue: the next one given, or the next one holding a queued task
    if next_due.queues is not null then
      v_i := v_i + 1;
      exit when v_i > pg_catalog.cardinality(next_due.queues);
      v_queue := next_due.queues[v_i];
    elsif v_i = 0 then
      v_i := 1;
      v_queue := (select t.queue from conductor.tasks t
                   where t.status = 'queued'
                   order by t.queue limit 1);
      exit when v_queue is null;
    else
      v_queue := (select t.queue from conductor.tasks t
                   where t.status = 'queued' and t.queue > v_queue
                   order by t.queue limit 1);
      exit when v_queue is null;
    end if;
    continue when v_queue = any (v_paused);  -- nothing of it is claimed

    -- its priorities, highest first, each with one probe
    v_priority := (select t.priority from conductor.tasks t
                    where t.status = 'queued' and t.queue = any (array[v_queue])
                    order by t.queue, t.priority desc limit 1);
    while v_priority is not null loop
      -- the first task past now at this priority: of kinds among the first 100, else any
      v_due := null;
      v_first := null;
      for v_task in
        select t.run_at, t.kind from conductor.tasks t
         where t.status = 'queued' and t.queue = any (array[v_queue])
           and t.priority = v_priority and t.run_at > v_now
         order by t.queue, t.priority desc, t.run_at
         limit case when next_due.kinds is null then 1 else 100 end
      loop
        v_first := coalesce(v_first, v_task.run_at);
        if next_due.kinds is null or v_task.kind = any (next_due.kinds) then
          v_due := v_task.run_at;
          exit;
        end if;
      end loop;
      v_due := coalesce(v_due, v_first);
      v_next := least(v_next, v_due);
      v_priority := (select t.priority from conductor.tasks t
                      where t.status = 'queued' and t.queue = any (array[v_queue])
                        and t.priority < v_priority
                      order by t.queue, t.priority desc limit 1);
    end loop;
  end loop;

  -- the next token of a rate-limited queue or kind with ready tasks (see above)
  for v_bucket in
    select r.scope, r.name, r.per_second, r.per_key,
           conductor._tokens(r.per_second, r.burst, r.tokens, r.refilled_at, v_now) as tokens
      from conductor.rate_limits r
     where (r.scope = 'queue' and (next_due.queues is null or r.name = any (next_due.queues))
            and (v_paused is null or r.name <> all (v_paused)))
        or (r.scope = 'kind' and (next_due.kinds is null or r.name = any (next_due.kinds)))
  loop
    if v_bucket.per_key then
      -- a limit per key (schema/rate_keys): a dry key's next token comes within
      -- 1 / per_second; a key with tokens would have been claimed
      v_at := v_now + greatest(interval '50 milliseconds', 1 / v_bucket.per_second * interval '1 second');
    elsif v_bucket.tokens + 1e-9 >= 1 then
      -- a token now, yet the caller's claim just came back short: the bucket refilled
      -- since, or another worker took the token first, or a concurrency key holds the
      -- task back. Look again shortly, not at the poll (and not at once: no busy loop).
      v_at := v_now + interval '50 milliseconds';
    else
      v_at := v_now + (1 - v_bucket.tokens) / v_bucket.per_second * interval '1 second';
    end if;
    continue when v_at >= v_next;
    if v_bucket.scope = 'queue' then
      select pg_catalog.count(*), pg_catalog.bool_or(x.startable) into v_read, v_startable
        from (select next_due.kinds is null or t.kind = any (next_due.kinds) as startable
                from conductor.tasks t
               where t.status = 'queued' and t.queue = any (array[v_bucket.name]) and t.run_at <= v_now
               order by t.queue, t.priority desc, t.run_at, t.id
               limit 1000) x;
    else
      select pg_catalog.count(*), pg_catalog.bool_or(x.startable) into v_read, v_startable
        from (select t.kind = v_bucket.name
                     and (next_due.queues is null or t.queue = any (next_due.queues))
                     and (v_paused is null or t.queue <> all (v_paused)) as startable
                from conductor.tasks t
               where t.status = 'queued' and t.run_at <= v_now
               order by t.priority desc, t.run_at, t.id
               limit 1000) x;
    end if;
    if v_startable or v_read = 1000 then
      v_next := least(v_next, v_at);
    end if;
  end loop;
  return v_next;
end
$$;

comment on function conductor.next_due(text[], text[]) is
$$The earliest run_at after now of a queued task of queues (NULL: every queue), or NULL when
none is due later: an idle worker sleeps until then (or until a notification) instead of
polling. Tasks due now are left out (claim them), and so are paused queues (pause_queue).
A rate-limited queue or kind (set_rate_limit) of the worker's queues and kinds with ready
tasks the worker could start answers the time its next token comes when that is earlier, or
now + 50 ms when its bucket holds a token already (the claim before missed it). kinds (NULL: every kind) is a hint: the
answer is the earliest task of those kinds among the first 100 of each priority, else the
earliest of any kind (a worker woken early finds nothing and asks again). Index probes
only (one per queue and priority), cheap with any backlog. Raises QC104 for an empty queue
list, one holding NULL or one naming an invalid queue (enqueue's rule), QC101 for an empty
kinds list or one holding NULL. Reads only; any number of callers.$$;

revoke execute on function conductor.next_due(text[], text[]) from public;
grant execute on function conductor.next_due(text[], text[]) to conductor_worker, conductor_admin;


revoke execute on function conductor.next_wake() from public;
grant execute on function conductor.next_wake() to conductor_worker, conductor_admin;
revoke execute on function conductor.reap(interval) from public;
grant execute on function conductor.reap(interval) to conductor_worker, conductor_admin;
revoke execute on function conductor.reap_report(interval) from public;
grant execute on function conductor.reap_report(interval) to conductor_worker, conductor_admin;

commit;
