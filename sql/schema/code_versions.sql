-- Deploy conductor:schema/code_versions to pg
--
-- Deploying new code under runs that are waiting (issue 31): a run replays its
-- finished steps by name, so a handler changed under a run that was waiting
-- would re-run or skip work when the run resumes. The engine records which
-- code a task's run started on, claims a task only by a worker that can replay
-- that code, and hands a resumed run its steps in the order they were saved,
-- so the worker can check that the handler asks for them in that order
-- (docs/versioning.md, docs/protocol.md).
--
--   conductor.tasks.code_version        the code version of the worker that first
--                                       claimed the task (claim(code_versions =>
--                                       ...)'s first element); NULL: claimed only by
--                                       workers that declared none, or not yet
--                                       claimed, or from before this change. A task
--                                       with one goes only to workers listing it.
--   conductor.steps.seq                 the order steps were saved in (a sequence;
--                                       rows from before are numbered in saved_at
--                                       order, then by name)
--   conductor.claimed_task.code_version what claim answers: the task's recorded
--                                       version (ctx.code_version)
--   conductor.claimed_task.step_order   the names of steps, in saved order
--                                       (NULL for a task never claimed before)
--
-- No index: claim reads code_version as a row filter on the rows it picks, and
-- only when the claim names versions; enqueue writes nothing more (a NULL).

begin;
set local role conductor_owner;

alter table conductor.tasks add column code_version text;
comment on column conductor.tasks.code_version is
  'The code version of the worker that first claimed the task (the first element of claim''s code_versions); '
  'a claim naming code_versions takes the task only when it lists this one. NULL: none recorded (goes to any worker).';

create sequence conductor.steps_seq;
alter table conductor.steps add column seq bigint;
-- steps saved before this change: in the order they were saved as far as saved_at tells it
update conductor.steps s
   set seq = o.n
  from (select s2.task_id, s2.name, pg_catalog.row_number() over (order by s2.saved_at, s2.task_id, s2.name) as n
          from conductor.steps s2) o
 where o.task_id = s.task_id and o.name = s.name;
select pg_catalog.setval('conductor.steps_seq', coalesce(pg_catalog.max(s.seq), 0) + 1, false) from conductor.steps s;
alter table conductor.steps
  alter column seq set default pg_catalog.nextval('conductor.steps_seq'),
  alter column seq set not null;
alter sequence conductor.steps_seq owned by conductor.steps.seq;
comment on column conductor.steps.seq is
  'The order steps were saved in (a resumed run replays them in this order; claim''s step_order).';

alter type conductor.claimed_task add attribute code_version text;
alter type conductor.claimed_task add attribute step_order text[];

commit;
