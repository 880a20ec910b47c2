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
--   conductor.tasks_expiring          queued tasks with a deadline, by
--                                     deadline: what reap() ends. Partial: a task
--                                     without expiry is not in it, so enqueue
--                                     and claim of such a task write no entry
--   conductor.tasks_unsuccessful      rebuilt to hold expired tasks with the
--                                     failed, dead and timed-out ones
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

create index tasks_expiring on conductor.tasks (expires_at)
  where status = 'queued' and expires_at is not null;

-- the rare rows a person looks for (search_tasks, the dashboard): expired ones too
drop index conductor.tasks_unsuccessful;
create index tasks_unsuccessful on conductor.tasks (id)
  where status in ('failed', 'dead', 'timed_out', 'expired');

commit;
