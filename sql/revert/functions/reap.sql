-- Revert conductor:functions/reap from pg: back to its v0.2.0 bodies, and drops the helpers
-- the rework added
--
-- The engine's upkeep, run by every worker's reaper (any number at once):
--
--   conductor.reap(stale_workers_after)   in order:
--     1. expired leases. A task whose attempt reached its deadline (claimed_at
--        + the task's timeout) fails as conductor.fail would fail it: error
--        'timed out after N s' (conductor._timed_out_error), the attempt
--        'failed', retried after the backoff (conductor._backoff, the task's
--        policy, else its kind's) while attempts remain, else 'failed';
--        recoveries untouched, the attempt counts. Any other expired lease is a
--        lost worker: the task goes back to its queue with recoveries + 1, or
--        is dead ("worker lost N times") once that passes max_recoveries (3 by
--        default, so the fourth loss is final); its attempt is closed as 'lost'
--        and does not count against max_attempts.
--     2. waits that reached their deadline: a sleep wakes; an event wait wakes
--        with {"timed_out": true} checkpointed; a wait for children ends the
--        task timed_out after cancelling its unfinished children.
--     3. the unknown-kind sweep, at most once per min(unknown_kind_after / 5,
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
--     4. workers not seen for greatest(stale_workers_after, unknown_kind_after)
--        are forgotten (the sweep reads their last_seen_at until then) with
--        their sleeper marks, served_kinds rows older than unknown_kind_after,
--        the result waiters and bus subscriptions of sessions that are gone, and
--        claim positions unused for stale_workers_after.
--
--   conductor._unserved(live_since)   the queued tasks no live worker can run,
--        per queue and kind: THE rule of "a worker can run a task" (it serves
--        both the task's queue and its kind; NULL queues or kinds: every one),
--        used by the sweep, stats().unrunnable and unrunnable()
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
-- reclaimed meanwhile. Lock order: task rows (children before parents: a
-- timed-out wait cancels the children first), then steps and attempt rows;
-- then the maintenance row and the swept task rows, both SKIP LOCKED (a sweep
-- another reaper is running is not waited for).
--
-- Cost of the sweep: it groups every queued task by queue and kind (a heap
-- read of the backlog: no index holds the kind), once per period, not per reap.

begin;
set local role conductor_owner;

-- The rule of "a worker can run a task", in one place: it serves the task's
-- queue (workers.queues NULL or holding it) and its kind (workers.kinds NULL or
-- holding it); a process that registered without the 'worker' role (a scheduler
-- only) runs nothing, whatever its kinds say (a row heartbeat re-created has no
-- roles and counts: it claims). Live: seen at or after live_since. Per (queue, kind) of the
-- queued tasks (due or not) that no live worker can run: how many, the
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
    select w.queues, w.kinds from conductor.workers w
     where w.last_seen_at >= _unserved.live_since
       and (w.roles = '{}' or 'worker' = any (w.roles))
  ), queued as (
    select t.queue, t.kind, pg_catalog.count(*) as tasks, pg_catalog.min(t.run_at) as oldest_run_at
      from conductor.tasks t
     where t.status = 'queued'
       -- a live worker of every queue and kind can run anything: nothing to read
       and not exists (select from live w where w.queues is null and w.kinds is null)
     group by t.queue, t.kind
  )
  select q.queue, q.kind, q.tasks, q.oldest_run_at,
         exists (select from live w where w.queues is null or q.queue = any (w.queues)),
         exists (select from live w where w.kinds is null or q.kind = any (w.kinds)),
         greatest((select pg_catalog.max(w.last_seen_at) from conductor.workers w
                    where (w.kinds is null or q.kind = any (w.kinds))
                      and (w.roles = '{}' or 'worker' = any (w.roles))),
                  (select s.last_served_at from conductor.served_kinds s where s.kind = q.kind))
    from queued q
   where not exists (select from live w
                      where (w.queues is null or q.queue = any (w.queues))
                        and (w.kinds is null or q.kind = any (w.kinds)))
$$;

comment on function conductor._unserved(timestamptz) is
$$Per (queue, kind), the queued tasks that no worker seen since live_since can run (a worker
runs a task when it serves both its queue and its kind; NULL: every one): tasks, the
earliest run_at, queue_served (a live worker serves the queue), kind_served (a live worker
serves the kind, on another queue), kind_last_served (the latest last_seen_at of a worker
serving the kind, on any queue, or served_kinds row).
The one rule read by reap()'s unknown-kind sweep, stats().unrunnable and unrunnable().
Reads every queued task's heap row (no index holds the kind), found through the ready
index, never the finished history.$$;

revoke execute on function conductor._unserved(timestamptz) from public;

create or replace function conductor.reap(stale_workers_after interval default interval '15 minutes')
  returns integer
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_now timestamptz := conductor.now();
  v_reaped integer;
  v_reaped_ids bigint[];
  v_done bigint[];
  v_queues text[];
  v_queue text;
  v_task record;
  v_unknown_after interval;
  v_swept bigint[];
begin
  -- 1. expired leases: timed out (a failure) or lost (a recovery)
  with expired as (
    select t.id, t.attempt_id, t.kind,
           t.timeout is not null and a.claimed_at + t.timeout <= v_now as timed_out
      from conductor.tasks t
      join conductor.attempts a on a.id = t.attempt_id
     where t.status = 'running' and t.lease_expires_at < v_now
     order by t.id
       for update of t skip locked
  ), reaped as (
    update conductor.tasks t
       set status = case when e.timed_out and t.attempt < t.max_attempts then 'queued'
                         when e.timed_out then 'failed'
                         when t.recoveries + 1 > t.max_recoveries then 'dead'
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
           error = case when e.timed_out then conductor._timed_out_error(t.timeout)
                        when t.recoveries + 1 > t.max_recoveries
                        then pg_catalog.format('worker lost %s times', t.recoveries + 1)
                        else t.error end,
           finished_at = case when e.timed_out and t.attempt < t.max_attempts then null
                              when e.timed_out or t.recoveries + 1 > t.max_recoveries then v_now end
      from expired e
      left join conductor.kinds k on k.kind = e.kind
     where t.id = e.id
    returning t.id, t.attempt_id, t.queue, t.status, e.timed_out, t.error
  ), closed as (
    update conductor.attempts a
       set outcome = case when r.timed_out then 'failed' else 'lost' end,
           finished_at = v_now,
           error = case when r.timed_out then r.error
                        else pg_catalog.format('lease expired at %s; worker %s presumed lost',
                                               v_now, a.worker_id) end
      from reaped r
     where a.id = r.attempt_id
  )
  select pg_catalog.count(*)::integer,
         -- a task back in its queue, due now or later (a retry after its backoff):
         -- a sleeping worker recomputes its wake-up, as after conductor.fail
         pg_catalog.array_agg(distinct r.queue) filter (where r.status = 'queued'),
         pg_catalog.array_agg(r.id)
    into v_reaped, v_queues, v_reaped_ids
    from reaped r;

  foreach v_queue in array coalesce(v_queues, '{}') loop
    perform conductor._notify_queue(v_queue);
  end loop;
  select pg_catalog.array_agg(t.id) into v_done
    from conductor.tasks t
   where t.id = any (v_reaped_ids) and t.status in ('dead', 'failed');
  perform conductor._notify_done(v_done);

  -- 2. sleeps and event waits that reached their deadline wake
  for v_task in
    select t.id, t.wait_for, t.wait_event from conductor.tasks t
     where t.status = 'waiting' and t.wait_until <= v_now and t.wait_for in ('sleep', 'event')
     order by t.id desc
       for no key update skip locked
  loop
    perform conductor._wake(v_task.id,
      case when v_task.wait_for = 'event'
           then pg_catalog.jsonb_build_object('event', v_task.wait_event, 'timed_out', true) end);
    v_reaped := v_reaped + 1;
  end loop;

  -- waits for children past their deadline: the children are cancelled first
  -- (children before parents), then the task ends timed_out; a child's end
  -- does not wake a parent whose deadline passed
  for v_task in
    select t.id, t.wait_for, t.wait_until from conductor.tasks t
     where t.status = 'waiting' and t.wait_until <= v_now
       and t.wait_for in ('children_all', 'children_any')
     order by t.id desc
  loop
    perform conductor.cancel(c.id)
       from conductor.tasks c
      where c.parent_id = v_task.id and c.status in ('queued', 'running', 'waiting')
      order by c.id desc;
    update conductor.tasks t
       set status = 'timed_out', finished_at = v_now,
           error = pg_catalog.format('waited for its children past its deadline %s', v_task.wait_until),
           wait_for = null, wait_event = null, wait_until = null, wait_step = null
     where t.id = v_task.id and t.status = 'waiting' and t.wait_until <= v_now;
    if found then
      perform conductor._notify_done(array[v_task.id]);
      v_reaped := v_reaped + 1;
    end if;
  end loop;

  -- 3. the unknown-kind sweep, once per period across all reapers: the one that
  -- moves unknown_kinds_swept_at sweeps (a clock set back, as tests do, sweeps too)
  select s.unknown_kind_after into v_unknown_after from conductor.settings s where s.one;
  if v_unknown_after is not null then
    update conductor.maintenance m
       set unknown_kinds_swept_at = v_now
     where m.one in (select x.one from conductor.maintenance x
                      where x.unknown_kinds_swept_at is null
                         or x.unknown_kinds_swept_at <= v_now - least(v_unknown_after / 5, interval '1 minute')
                         or x.unknown_kinds_swept_at > v_now
                        for update skip locked);
    if found then
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
      v_reaped := v_reaped + coalesce(pg_catalog.cardinality(v_swept), 0);
    end if;
  end if;

  -- 4. forget workers (kept while the sweep may still read them) and served kinds
  delete from conductor.workers w
   where w.last_seen_at < v_now - greatest(reap.stale_workers_after, v_unknown_after);
  delete from conductor.served_kinds s
   where s.last_served_at < v_now - coalesce(v_unknown_after, reap.stale_workers_after);
  -- claim positions unused for stale_workers_after: a worker that died or stopped while its
  -- scans were slow (a live claimer replaces or deletes its row at each full scan); their
  -- until is epoch seconds of the real clock, as claim writes it
  if exists (select from conductor.claim_positions) then
    delete from conductor.claim_positions p
     where p.until < extract(epoch from pg_catalog.clock_timestamp() - reap.stale_workers_after);
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
  return v_reaped;
end
$$;

comment on function conductor.reap(interval) is
$$Takes back every running task whose lease expired. An attempt that reached its time limit
(claimed_at + the task's timeout) failed: attempt outcome 'failed', error 'timed out after
N s'; the task is queued again after the backoff while attempts remain (max_attempts),
else 'failed', as conductor.fail does; recoveries untouched. Otherwise the worker is
presumed lost: queued again with recoveries + 1, or dead ('worker lost N times') past
max_recoveries; the attempt is closed as 'lost'.
Ends the waits that reached their deadline: sleeps and event waits are queued again (an
event wait with {"event", "timed_out": true} as its outcome); a wait for children ends
timed_out and its unfinished children are cancelled.
At most once per min(unknown_kind_after / 5, 1 minute) across all reapers, dead-letters
(status 'dead', error naming the kind) each queued task due for at least
conductor.settings.unknown_kind_after (5 minutes; NULL: never) whose queue a live worker
serves (seen within unknown_kind_after) but whose kind none has served for that long
(workers.kinds, and served_kinds for workers that deregistered); never a task of a paused
queue.
Deletes workers rows not seen for greatest(stale_workers_after (15 min),
unknown_kind_after) with their sleepers rows, served_kinds rows older than
unknown_kind_after, result_waiters and subscriptions rows of sessions that ended, and
claim_positions rows unused for stale_workers_after (a worker that stopped while its
scans were slow). Returns how many tasks it took back, failed, woke or dead-lettered. Compare-and-set with
SKIP LOCKED: safe to run from every worker at once; a late reaper never touches a task
that finished or was reclaimed.$$;

create or replace function conductor.next_wake() returns timestamptz
  language sql stable
  security definer
  set search_path = pg_catalog, pg_temp
as $$
  select least((select pg_catalog.min(t.wait_until) from conductor.tasks t where t.status = 'waiting'),
                (select pg_catalog.min(t.lease_expires_at) from conductor.tasks t where t.status = 'running'))
$$;

comment on function conductor.next_wake() is
$$The earliest time reap() will have something to do (a wait's deadline, a lease's expiry),
or NULL when nothing waits or runs. A worker runs reap() then, rather than only every
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
    select r.scope, r.name, r.per_second,
           conductor._tokens(r.per_second, r.burst, r.tokens, r.refilled_at, v_now) as tokens
      from conductor.rate_limits r
     where (r.scope = 'queue' and (next_due.queues is null or r.name = any (next_due.queues))
            and (v_paused is null or r.name <> all (v_paused)))
        or (r.scope = 'kind' and (next_due.kinds is null or r.name = any (next_due.kinds)))
  loop
    if v_bucket.tokens + 1e-9 >= 1 then
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
list or one holding NULL, QC101 for such a kinds list. Reads only; any number of callers.$$;

revoke execute on function conductor.next_due(text[], text[]) from public;
grant execute on function conductor.next_due(text[], text[]) to conductor_worker, conductor_admin;


revoke execute on function conductor.next_wake() from public;
grant execute on function conductor.next_wake() to conductor_worker, conductor_admin;
revoke execute on function conductor.reap(interval) from public;
grant execute on function conductor.reap(interval) to conductor_worker, conductor_admin;

-- what the rework added (the bodies above no longer call them)
drop function conductor.reap_report(interval);
drop function conductor._reap_expired();
drop function conductor._expired_error(timestamptz, interval);
drop function conductor._reap_leases();
drop function conductor._reap_waits();
drop function conductor._reap_unknown_kinds();
drop function conductor._reap_stale(interval);
drop function conductor._forget_rate_keys(integer);
drop function conductor._fail_run(bigint, integer, integer);
drop function conductor._lock_tree(bigint);
drop function conductor._serves(text[], text[], text[], text, text);

commit;
