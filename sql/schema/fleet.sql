-- Deploy conductor:schema/fleet to pg
--
-- What a fleet of workers of different versions needs from the data model:
--
--   conductor.workers.kinds        the kinds a worker has handlers for (NULL:
--                                  every kind, a worker that does not say);
--                                  claim leaves out tasks of other kinds, and
--                                  the reaper dead-letters a task whose kind no
--                                  live worker of its queue has served for
--                                  settings.unknown_kind_after
--   conductor.kinds.queue, priority, concurrency_key, timeout
--                                  a kind's enqueue defaults, so a task enqueued
--                                  from psql, a trigger or another language gets
--                                  what the Python registry would give it
--   conductor.tasks.timeout        how long one attempt may run (NULL: no
--                                  limit); claim and heartbeat never lease past
--                                  it, and an attempt that reaches it fails as
--                                  timed out, retried per the task's policy
--   conductor._task_spec.timeout   the same, in a task to enqueue
--   conductor.claimed_task.timeout what claim answers, so the worker knows the limit
--   conductor.settings.unknown_kind_after
--                                  5 minutes; NULL never dead-letters a kind
--   conductor.served_kinds         when a worker that stopped cleanly last served
--                                  each kind (its workers row is gone): with the
--                                  rows of live workers, what "no live worker
--                                  has served this kind for a while" reads
--   conductor.maintenance          when the reaper last swept for unserved kinds
--                                  (one row; the sweep reads every queued task,
--                                  so it runs once per interval, not per reap)
--
-- Every column is new and NULL or has a constant default: no table rewrite.

begin;
set local role conductor_owner;

alter table conductor.workers add column kinds text[];
comment on column conductor.workers.kinds is
  'The kinds the worker has handlers for (claim''s kinds); NULL: every kind.';

alter table conductor.kinds
  add column queue           text,
  add column priority        integer,
  add column concurrency_key text,
  add column timeout         interval;
comment on column conductor.kinds.queue is
  'The queue of a task of this kind enqueued without one (NULL: ''default'').';
comment on column conductor.kinds.priority is
  'The priority of a task of this kind enqueued without one (NULL: 0).';
comment on column conductor.kinds.concurrency_key is
  'The concurrency_key of a task of this kind enqueued without one (NULL: none).';
comment on column conductor.kinds.timeout is
  'How long one attempt of a task of this kind enqueued without a timeout may run (NULL: no limit).';

alter table conductor.tasks add column timeout interval;
comment on column conductor.tasks.timeout is
  'How long one attempt may run (NULL: no limit): the lease never passes claimed_at + timeout, '
  'and an attempt that reaches it fails as timed out (retried per max_attempts).';

alter type conductor._task_spec add attribute timeout interval;
alter type conductor.claimed_task add attribute timeout interval;

alter table conductor.settings
  add column unknown_kind_after interval default interval '5 minutes'
    check (unknown_kind_after between interval '1 second' and interval '30 days');
comment on column conductor.settings.unknown_kind_after is
  'A queued task due this long whose kind no live worker of its queue serves is dead-lettered '
  'by reap() (default 5 minutes; NULL: never).';

create table conductor.served_kinds (
  kind           text primary key,
  last_served_at timestamptz not null
);
comment on table conductor.served_kinds is
  'When a worker that deregistered last served each kind; written by deregister_worker, '
  'pruned by reap() once older than unknown_kind_after.';
revoke all on conductor.served_kinds from public;
grant select on conductor.served_kinds to conductor_client, conductor_worker, conductor_admin;

create table conductor.maintenance (
  one                    boolean primary key default true check (one),
  unknown_kinds_swept_at timestamptz
);
comment on table conductor.maintenance is
  'The engine''s own bookkeeping, one row, written by reap() only.';
insert into conductor.maintenance default values;
revoke all on conductor.maintenance from public;
grant select on conductor.maintenance to conductor_client, conductor_worker, conductor_admin;

commit;
