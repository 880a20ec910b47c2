-- Deploy conductor:functions/stats to pg
--
-- What an operator watches, per queue, cheap enough to call every few seconds
-- on a table of millions of finished rows.
--
--   conductor.stats()       per queue: ready, scheduled, running, waiting, backlog
--                           age, finished in the last 1/5/15 minutes, failure
--                           rate, unrunnable (queued, and no live worker can run),
--                           paused (pause_queue)
--   conductor.unrunnable()  per queue and kind: the queued tasks no live worker
--                           can run, and when reap() will dead-letter them
--
-- Owns the index tasks_finished (finished rows by finished_at, with queue and
-- status included), which serves both stats() (the last 15 minutes) and
-- prune() (everything before a cutoff). Where each count comes from:
--
--   ready, scheduled, oldest_ready_age  tasks_ready_by_queue (status = 'queued'),
--                                       index-only: the unfinished backlog
--   running                             tasks_running   (status = 'running')
--   waiting                             tasks_waiting   (status = 'waiting')
--   succeeded_*, failed_*               tasks_finished, a range scan over the
--                                       last 15 minutes only; older history is
--                                       never read
--   unrunnable                          conductor._unserved (functions/reap): the
--                                       rule of which worker can run which task;
--                                       it reads the heap rows of the queued
--                                       backlog (the kind is in no index), and
--                                       nothing when a live worker serves every
--                                       queue and kind
--   paused                              conductor.paused_queues (a handful of
--                                       rows); a paused queue has a row even
--                                       when it holds no task
--
-- Cost on the hot path: complete, fail and cancel change status, which is an
-- indexed (predicate) column, so those updates are never HOT and already add
-- a new entry to the primary key; tasks_finished adds one more btree insert
-- at the right edge for each task that finishes. Claims and heartbeats leave
-- finished_at null and do not touch it.
--
-- Measured (2 shared CPUs, PostgreSQL defaults): with 1M finished and 100k queued
-- tasks, explain analyze of stats() takes 73-124 ms, of which counting the 100k
-- queued backlog (index-only, no heap fetches) is ~75 ms and the last 15 minutes
-- of history (1,385 rows via tasks_finished) 1.4 ms: the cost follows the backlog
-- and the 15-minute throughput, not the history. pgbench claim+complete with and
-- without tasks_finished (500k finished rows, 4 alternating rounds of 15 s) gave
-- 496 vs 432 tps on average, round-to-round noise (157-690 tps) far above any
-- difference: no cost could be resolved on this machine.
-- unrunnable, with 100k queued tasks (5 kinds, 4 queues, two workers serving some)
-- and 300k finished: stats() 45 ms against 22 ms without it, warm; the difference
-- is conductor._unserved reading the backlog's heap rows (unrunnable() alone 23 ms).
--
-- Takes no locks beyond a plain snapshot read; any number of callers at once.
-- Raises nothing whatever is stored: v0.1.0 accepted a run_at of -infinity,
-- whose age (now minus it) raised 22008, so the age counts from the earliest
-- time enqueue accepts now (conductor._time_range()).

begin;
set local role conductor_owner;

-- stats() gains columns (unrunnable, paused): its return type changes, so it is
-- dropped and created again.
drop function conductor.stats();

-- The index tasks_finished is created by functions/stats@v0.1.0 and unchanged since.

comment on index conductor.tasks_finished is
  'Finished tasks by finish time: stats() reads the last 15 minutes, prune() the rows before its cutoff.';

create or replace function conductor.stats()
  returns table (
    queue            text,
    ready            bigint,
    scheduled        bigint,
    running          bigint,
    waiting          bigint,
    oldest_ready_age interval,
    succeeded_1m     bigint,
    succeeded_5m     bigint,
    succeeded_15m    bigint,
    failed_1m        bigint,
    failed_5m        bigint,
    failed_15m       bigint,
    failure_rate     double precision,
    unrunnable       bigint,
    paused           boolean)
  language sql stable
  security definer
  set search_path = pg_catalog, pg_temp
as $$
  with clock as (
    -- the earliest time enqueue accepts: a row stored before run_at was checked
    -- (v0.1.0 took -infinity) is measured from it instead of making stats() raise
    select conductor.now() as now, pg_catalog.lower(conductor._time_range()) as earliest,
           (select s.unknown_kind_after from conductor.settings s where s.one) as live_for
  ), queued as (
    select t.queue,
           count(*) filter (where t.run_at <= c.now) as ready,
           count(*) filter (where t.run_at > c.now) as scheduled,
           min(t.run_at) filter (where t.run_at <= c.now) as oldest_run_at
      from conductor.tasks t cross join clock c
     where t.status = 'queued'
     group by t.queue
  ), running as (
    select t.queue, count(*) as n
      from conductor.tasks t
     where t.status = 'running'
     group by t.queue
  ), waiting as (
    select t.queue, count(*) as n
      from conductor.tasks t
     where t.status = 'waiting'
     group by t.queue
  ), finished as (
    select t.queue,
           count(*) filter (where t.status = 'succeeded' and t.finished_at > c.now - interval '1 minute') as s1,
           count(*) filter (where t.status = 'succeeded' and t.finished_at > c.now - interval '5 minutes') as s5,
           count(*) filter (where t.status = 'succeeded') as s15,
           count(*) filter (where t.status in ('failed', 'dead') and t.finished_at > c.now - interval '1 minute') as f1,
           count(*) filter (where t.status in ('failed', 'dead') and t.finished_at > c.now - interval '5 minutes') as f5,
           count(*) filter (where t.status in ('failed', 'dead')) as f15
      from conductor.tasks t cross join clock c
     where t.finished_at > c.now - interval '15 minutes'
       and t.finished_at <= c.now
     group by t.queue
  ), unrunnable as (
    -- live: seen within unknown_kind_after (5 minutes when it is NULL)
    select u.queue, sum(u.tasks)::bigint as n
      from clock c
     cross join lateral conductor._unserved(c.now - coalesce(c.live_for, interval '5 minutes')) u
     group by u.queue
  ), queues as (
    select q.queue from queued q
    union select r.queue from running r
    union select w.queue from waiting w
    union select f.queue from finished f
    union select p.queue from conductor.paused_queues p
  )
  select qs.queue,
         coalesce(q.ready, 0), coalesce(q.scheduled, 0),
         coalesce(r.n, 0), coalesce(w.n, 0),
         case when q.oldest_run_at is not null
              then greatest(c.now - greatest(q.oldest_run_at, c.earliest), interval '0') end,
         coalesce(f.s1, 0), coalesce(f.s5, 0), coalesce(f.s15, 0),
         coalesce(f.f1, 0), coalesce(f.f5, 0), coalesce(f.f15, 0),
         case when coalesce(f.s15, 0) + coalesce(f.f15, 0) > 0
              then f.f15::double precision / (f.s15 + f.f15) end,
         coalesce(u.n, 0),
         exists (select from conductor.paused_queues p where p.queue = qs.queue)
    from queues qs
    cross join clock c
    left join queued q on q.queue = qs.queue
    left join running r on r.queue = qs.queue
    left join waiting w on w.queue = qs.queue
    left join finished f on f.queue = qs.queue
    left join unrunnable u on u.queue = qs.queue
   order by qs.queue
$$;

comment on function conductor.stats() is
$$One row per queue that has unfinished tasks or finished some in the last 15 minutes,
by queue name: ready (queued and due now: the depth), scheduled (queued, due later),
running, waiting, oldest_ready_age (now minus the earliest due time of a ready task: the
backlog age; NULL with nothing ready), succeeded_1m/5m/15m and failed_1m/5m/15m (tasks
that finished in the last 1, 5, 15 minutes; failed counts failed and dead; cancelled and
timed_out are in neither), failure_rate (failed_15m / (succeeded_15m + failed_15m); NULL
when nothing finished), unrunnable (queued tasks, due or not, that no worker seen within
conductor.settings.unknown_kind_after, 5 minutes when NULL, can run: none serves both the
task's queue and its kind; conductor.unrunnable() says which), paused (pause_queue: claim
takes nothing from it; a paused queue has a row even with no tasks). Reads the conductor.now() clock. Index-backed: the unfinished
tasks and the last 15 minutes of finished ones, never older history. Takes no locks;
raises nothing, whatever is stored: a ready task due at -infinity (written before run_at
was checked) counts from 0001-01-02, one due at infinity is scheduled.$$;

revoke execute on function conductor.stats() from public;
grant execute on function conductor.stats() to conductor_client, conductor_worker, conductor_admin;

create or replace function conductor.unrunnable()
  returns table (
    queue          text,
    kind           text,
    tasks          bigint,
    oldest_run_at  timestamptz,
    dead_letter_at timestamptz)
  language sql stable
  security definer
  set search_path = pg_catalog, pg_temp
as $$
  with clock as (
    select conductor.now() as now, s.unknown_kind_after as after
      from conductor.settings s where s.one
  )
  select u.queue, u.kind, u.tasks, u.oldest_run_at,
         -- the sweep's rule (conductor.reap): a live worker on the queue, none
         -- serving the kind; from then on the next sweep takes the oldest
         case when c.after is not null and u.queue_served and not u.kind_served
                   and not exists (select from conductor.paused_queues p where p.queue = u.queue)
              then greatest(u.oldest_run_at, u.kind_last_served) + c.after end
    from clock c
   cross join lateral conductor._unserved(c.now - coalesce(c.after, interval '5 minutes')) u
   order by u.queue, u.kind
$$;

comment on function conductor.unrunnable() is
$$Per queue and kind, the queued tasks (due or not) that no worker seen within
conductor.settings.unknown_kind_after (5 minutes when NULL) can run, none serving both
the queue and the kind: tasks, oldest_run_at, and dead_letter_at, when reap()'s
unknown-kind sweep may dead-letter the oldest (its run_at, or the last time a worker
served the kind, whichever is later, plus unknown_kind_after; the sweep runs at most
every min(unknown_kind_after / 5, 1 minute)). dead_letter_at is NULL when the sweep will
not: unknown_kind_after is NULL, no live worker serves the queue (nobody there to call
the kind unknown), a live worker serves the kind on another queue, or the queue is paused
(pause_queue: its tasks stay as they are until it resumes). Ordered by queue
and kind. Reads the queued tasks' rows; takes no locks.$$;

revoke execute on function conductor.unrunnable() from public;
grant execute on function conductor.unrunnable() to conductor_client, conductor_worker, conductor_admin;

commit;
