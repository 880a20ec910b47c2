-- Deploy conductor:schema/wakeups to pg
--
-- Who waits, so that the engine notifies only them (functions/notify). A
-- pg_notify takes a database-wide lock at commit and holds it through the WAL
-- flush, so every notifying commit of the database runs one at a time; a
-- notification nobody waits for costs every other committer.
--
--   conductor.sleepers        a worker that found nothing to claim and waits on
--                             LISTEN conductor: one row per queue it waits on
--                             ('*': every queue). conductor.sleep() writes it,
--                             conductor.wake() and the worker row's deletion
--                             (deregister_worker, reap) remove it. Enqueue and
--                             every requeue notify a queue only when a row
--                             names it or '*'.
--   conductor.result_waiters  a session waiting for a task's end (LISTEN
--                             conductor_done): conductor.watch() writes it; the
--                             completion that tells it, conductor.unwatch() and
--                             reap() (for a session that is gone) remove it.
--                             A completion notifies only when a row names one of
--                             the tasks it finished.
--
-- Both stay empty under load (workers busy, nobody waiting on a result): the
-- hot paths' checks are probes of an empty index.

begin;
set local role conductor_owner;

create table conductor.sleepers (
  queue     text not null,
  worker_id text not null references conductor.workers (id) on delete cascade,
  since     timestamptz not null,
  primary key (queue, worker_id)
);
create index sleepers_by_worker on conductor.sleepers (worker_id);
comment on table conductor.sleepers is
  'Workers waiting on LISTEN conductor for work, one row per queue (''*'': every queue); '
  'written by sleep(), removed by wake() and with the worker''s row. Enqueue notifies only these.';
revoke all on conductor.sleepers from public;
grant select on conductor.sleepers to conductor_client, conductor_worker, conductor_admin;

create table conductor.result_waiters (
  task_id bigint not null,
  pid     integer not null,
  since   timestamptz not null,
  primary key (task_id, pid)
);
comment on table conductor.result_waiters is
  'Sessions (backend pid) waiting on LISTEN conductor_done for a task''s end; written by '
  'watch(), removed by the completion that notifies them, by unwatch(), and by reap() once '
  'the session is gone.';
revoke all on conductor.result_waiters from public;
grant select on conductor.result_waiters to conductor_client, conductor_worker, conductor_admin;

commit;
