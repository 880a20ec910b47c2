-- Deploy conductor:schema/run_recoveries to pg
-- requires: schema/owner
-- requires: schema/tasks
--
-- What the seeds' recovery rules and the lock-free event wake-ups store (issue 25):
--
--   conductor.run_recoveries   one row per run (its root's id) that lost a
--                              worker while unfinished: recoveries, the lost
--                              workers reap() took back across the run's
--                              tasks (root, children, their resumes) since it
--                              was enqueued or last retried; stopped, once
--                              that reached the limit and the run was failed,
--                              the descendants the failure cancelled (retry
--                              of the root queues them again). Written only
--                              by a transaction that holds a lock of the
--                              root's task row (reap: FOR KEY SHARE; retry:
--                              FOR UPDATE), deleted by reap once the
--                              root is gone or finished without the limit
--                              failing it (functions/reap).
--   conductor.settings.max_run_recoveries
--                              the limit: "a run that still hasn't finished
--                              after four recoveries is marked failed" (4;
--                              NULL: no limit per run)
--   conductor.events.pending, pending_horizon
--                              a new event stays pending until the reaper has
--                              seen every transaction that could have missed
--                              it end, and woke their waiters; then no task
--                              is left waiting for it (functions/runs, the
--                              map; functions/reap, step 2)
--
-- Upgrade from v0.2.0: every unfinished run whose tasks hold recoveries gets
-- their sum (a run already at the limit is failed by the first reap after the
-- upgrade); every event some task waits for is marked pending, so the reaper
-- looks at its waiters once. Every column is new and NULL or has a constant
-- default: no table rewrite.

begin;
set local role conductor_owner;

create table conductor.run_recoveries (
  root_id    bigint primary key,
  recoveries integer not null default 0 check (recoveries >= 0),
  stopped    bigint[]
);
comment on table conductor.run_recoveries is
  'Per run (root_id), the lost workers reap() took back across its tasks since it was enqueued or '
  'retried (recoveries), and, once that reached settings.max_run_recoveries and the run was failed, '
  'the unfinished descendants the failure cancelled (stopped), which retry of the root queues again.';

alter table conductor.settings
  add column max_run_recoveries integer default 4 check (max_run_recoveries >= 1);
comment on column conductor.settings.max_run_recoveries is
  'A run (a root and its descendants) whose lost workers reach this many while its root is unfinished '
  'is failed, its unfinished descendants cancelled (default 4; NULL: no limit per run).';

alter table conductor.events
  add column pending         boolean not null default false,
  add column pending_horizon xid8;
create index events_pending on conductor.events (name) where pending;
comment on column conductor.events.pending is
  'A new event: a suspend that ran while it was being emitted may wait for it unseen; reap() wakes '
  'such waiters and clears pending once no transaction older than pending_horizon runs.';
comment on column conductor.events.pending_horizon is
  'The next transaction id when reap() first saw the pending event: once every older transaction '
  'ended, each suspend that could have missed the event has committed its wait where reap() sees it.';

insert into conductor.run_recoveries (root_id, recoveries)
select t.root_id, pg_catalog.sum(t.recoveries)::integer
  from conductor.tasks t
  join conductor.tasks r on r.id = t.root_id and r.status in ('queued', 'running', 'waiting')
 group by t.root_id
having pg_catalog.sum(t.recoveries) > 0;

update conductor.events e
   set pending = true
 where exists (select from conductor.tasks t
                where t.status = 'waiting' and t.wait_for = 'event' and t.wait_event = e.name);

revoke all on conductor.run_recoveries from public;
grant select on conductor.run_recoveries to conductor_client, conductor_worker, conductor_admin;

commit;
