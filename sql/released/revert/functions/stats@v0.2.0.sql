-- Revert conductor:functions/stats from pg: back to its v0.1.0 body
--
-- The v0.1.0 deploy script (functions/stats@v0.1.0.sql), with create or replace, and
-- search_path pinned to pg_catalog, pg_temp instead of '': going back to v0.1.0's
-- bodies does not reopen the pg_temp escalation (issue 14).
--
-- What an operator watches, per queue, cheap enough to call every few seconds
-- on a table of millions of finished rows.
--
--   conductor.stats()   per queue: ready, scheduled, running, waiting, backlog
--                       age, finished in the last 1/5/15 minutes, failure rate
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
--
-- Takes no locks beyond a plain snapshot read; any number of callers at once.

begin;

-- 0.2.0's stats() returns one more column (unrunnable): dropped, then v0.1.0's created again.
drop function conductor.unrunnable();
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
    failure_rate     double precision)
  language sql stable
  security definer
  set search_path = pg_catalog, pg_temp
as $$
  with clock as (
    select conductor.now() as now
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
  ), queues as (
    select q.queue from queued q
    union select r.queue from running r
    union select w.queue from waiting w
    union select f.queue from finished f
  )
  select qs.queue,
         coalesce(q.ready, 0), coalesce(q.scheduled, 0),
         coalesce(r.n, 0), coalesce(w.n, 0),
         case when q.oldest_run_at is not null then greatest(c.now - q.oldest_run_at, interval '0') end,
         coalesce(f.s1, 0), coalesce(f.s5, 0), coalesce(f.s15, 0),
         coalesce(f.f1, 0), coalesce(f.f5, 0), coalesce(f.f15, 0),
         case when coalesce(f.s15, 0) + coalesce(f.f15, 0) > 0
              then f.f15::double precision / (f.s15 + f.f15) end
    from queues qs
    cross join clock c
    left join queued q on q.queue = qs.queue
    left join running r on r.queue = qs.queue
    left join waiting w on w.queue = qs.queue
    left join finished f on f.queue = qs.queue
   order by qs.queue
$$;

comment on function conductor.stats() is
$$One row per queue that has unfinished tasks or finished some in the last 15 minutes,
by queue name: ready (queued and due now: the depth), scheduled (queued, due later),
running, waiting, oldest_ready_age (now minus the earliest due time of a ready task: the
backlog age; NULL with nothing ready), succeeded_1m/5m/15m and failed_1m/5m/15m (tasks
that finished in the last 1, 5, 15 minutes; failed counts failed and dead; cancelled and
timed_out are in neither), failure_rate (failed_15m / (succeeded_15m + failed_15m); NULL
when nothing finished). Reads the conductor.now() clock. Index-backed: the unfinished
tasks and the last 15 minutes of finished ones, never older history. Takes no locks;
raises nothing.$$;

revoke execute on function conductor.stats() from public;
grant execute on function conductor.stats() to conductor_client, conductor_worker, conductor_admin;

commit;
