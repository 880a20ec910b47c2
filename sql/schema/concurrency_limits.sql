-- Deploy conductor:schema/concurrency_limits to pg
--
-- A concurrency limit of N per concurrency_key, and fair turns across keys (issue 30):
--
--   conductor.tasks.concurrency_limit     how many tasks of the task's concurrency_key may
--                                         run at once when this task starts (1..10000;
--                                         NULL: 1, the rule since v0.1.0). Resolved at
--                                         enqueue (the caller's, else the kind's); stored
--                                         only with a concurrency_key
--   conductor.kinds.concurrency_limit     the kind's default (configure_kind; NULL: 1)
--   conductor.schedules.concurrency_limit a schedule's tasks' limit (create_schedule;
--                                         NULL: the kind's, else 1)
--   conductor._task_spec.concurrency_limit  the same, in a task to enqueue (the LAST
--                                         attribute: row(...) constructors are positional)
--   tasks_ready_by_key                    the ready keyed tasks by key: claim's key probe
--                                         walks the keys one descent each (a skip scan, in
--                                         the order of hashtextextended(key, 0), the hash
--                                         the key's slot row comes from) and reads each
--                                         key's head, never a key's backlog
--
-- No check constraint (enqueue validates through _spec_problem, one rule in one
-- place): an unkeyed task stores NULL, one bit of its null bitmap. The index is
-- partial over ready keyed tasks: an unkeyed enqueue or claim writes no entry in it.
-- New NULL columns: no table rewrite.

begin;
set local role conductor_owner;

alter table conductor.tasks add column concurrency_limit integer;
comment on column conductor.tasks.concurrency_limit is
  'At most this many tasks of the task''s concurrency_key run at once when it starts: claim '
  'starts it only while fewer than this many of its key run (NULL: 1). 1..10000; '
  'NULL without a concurrency_key.';

alter table conductor.kinds add column concurrency_limit integer;
comment on column conductor.kinds.concurrency_limit is
  'The concurrency_limit of a keyed task of this kind enqueued without one (NULL: 1).';

alter table conductor.schedules add column concurrency_limit integer;
comment on column conductor.schedules.concurrency_limit is
  'The concurrency_limit of the tasks the schedule fires (with its concurrency_key; NULL: the kind''s, else 1).';

alter type conductor._task_spec add attribute concurrency_limit integer;

create index tasks_ready_by_key on conductor.tasks
  (pg_catalog.hashtextextended(concurrency_key, 0), concurrency_key, priority desc, run_at, id)
  where status = 'queued' and concurrency_key is not null;

commit;
