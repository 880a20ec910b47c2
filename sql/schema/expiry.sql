-- Deploy conductor:schema/expiry to pg
--
-- Expiry before start (issue 30): a task not started within expires_in of
-- becoming due ends 'expired' (schema/expired_status) instead of waiting for
-- ever.
--
--   conductor.tasks.expires_in        the policy: how long after it is due the
--                                     task may wait for its first start (NULL:
--                                     for ever); kept so retry() gives the task a
--                                     fresh deadline
--   conductor.tasks.expires_at        the deadline to start: run_at + expires_in
--                                     while the task has never started; claim
--                                     clears it (a task started once never
--                                     expires: failed with backoff, lost or
--                                     released, it waits as long as it takes)
--   conductor.kinds.expires_in        a kind's default (configure_kind)
--   conductor._task_spec.expires_in   the same, in a task to enqueue (the
--                                     last attribute: row() constructors of the
--                                     spec are positional)
--   conductor.task_deadlines          one row per deadline to start set (by
--                                     enqueue, retry), indexed by time: what
--                                     reap() reads to find the tasks to end.
--                                     Rows whose task started, finished or went
--                                     are deleted by reap() once their time comes
--   conductor.tasks_unsuccessful      rebuilt to hold expired tasks with the
--                                     failed, dead and timed-out ones
--
-- Why a table of its own, not an index on conductor.tasks (expires_at): every
-- statement writing conductor.tasks opens, locks and checks every index of it,
-- whether or not a row enters it. A partial index on expires_at cost each
-- enqueue 10,000 CPU instructions (1.3 %) and each claim and completion some
-- too, with no task using expiry (bench/instructions.sh). The deadlines table
-- is written only for a task that has one; tasks.expires_at, unindexed, is
-- what claim reads on the row it picks.
--
-- No check constraint (enqueue validates through _spec_problem, one rule in
-- one place; constraints are parsed at every writing statement,
-- schema/hot_checks). NULLs cost a row one bit of its null bitmap each.

begin;
set local role conductor_owner;

alter table conductor.tasks add column expires_in interval, add column expires_at timestamptz;
comment on column conductor.tasks.expires_in is
  'How long after it is due the task may wait for its first start (NULL: for ever); retry() '
  'gives it a fresh deadline from its new due time.';
comment on column conductor.tasks.expires_at is
  'The deadline to start (run_at + expires_in) of a task never started, else NULL: claim never '
  'starts the task after it, reap() ends it ''expired''; claim clears it (a task started once never expires).';

alter table conductor.kinds add column expires_in interval;
comment on column conductor.kinds.expires_in is
  'How long a task of this kind enqueued without expires_in may wait after it is due for its first start '
  '(NULL: for ever).';

alter type conductor._task_spec add attribute expires_in interval;

alter table conductor.schedules add column expires_in interval;
comment on column conductor.schedules.expires_in is
  'The expires_in of the tasks the schedule fires (NULL: the kind''s, else none): a fire not started '
  'that long after it was enqueued ends expired.';

-- No foreign key: a task's deletion (prune, retention) would look it up; a row
-- whose task is gone is deleted by reap() when its time comes.
create table conductor.task_deadlines (
  task_id    bigint primary key,
  expires_at timestamptz not null
);
create index task_deadlines_due on conductor.task_deadlines (expires_at);
comment on table conductor.task_deadlines is
  'The deadlines to start that enqueue and retry set (tasks.expires_at), by time: what reap() reads to end '
  'the tasks never started by theirs ''expired''. Written by the engine only.';
grant select on conductor.task_deadlines to conductor_client, conductor_worker, conductor_admin;

-- the rare rows a person looks for (search_tasks, the dashboard): expired ones too
drop index conductor.tasks_unsuccessful;
create index tasks_unsuccessful on conductor.tasks (id)
  where status in ('failed', 'dead', 'timed_out', 'expired');

commit;
