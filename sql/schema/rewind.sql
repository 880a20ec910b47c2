-- Deploy conductor:schema/rewind to pg
--
-- Rewind and fork (issue 31): restart a run from a chosen step, keeping the steps
-- saved before it, or copy a run from a step.
--
--   conductor.steps.seq   the order steps were saved in (conductor.step_seq): "the steps
--                         before step X" are those of the task with a smaller seq.
--                         saved_at cannot say it: the steps of one transaction, or of a
--                         fake clock, share a time. Existing rows are numbered by
--                         (saved_at, task_id, name): a run in flight is numbered in the
--                         order its steps were saved, ties (same instant) by name.
--   conductor.forks       one row per task that conductor.fork() copied from another:
--                         its source and the step it was forked from (get_task shows
--                         them); deleted with the task (prune's _delete_tasks; no
--                         foreign key: its triggers would run at every update of a task)
--
-- Writers of steps (save_step, spawn, suspend, the wake-ups) take seq from its
-- default; nothing on the hot path reads it.

begin;
set local role conductor_owner;

create sequence conductor.step_seq as bigint;

alter table conductor.steps add column seq bigint;
update conductor.steps s
   set seq = o.n
  from (select s2.task_id, s2.name,
               pg_catalog.row_number() over (order by s2.saved_at, s2.task_id, s2.name) as n
          from conductor.steps s2) o
 where s.task_id = o.task_id and s.name = o.name;
select pg_catalog.setval('conductor.step_seq', coalesce((select pg_catalog.max(s.seq) from conductor.steps s), 0) + 1, false);
alter table conductor.steps alter column seq set default pg_catalog.nextval('conductor.step_seq');
alter table conductor.steps alter column seq set not null;
alter sequence conductor.step_seq owned by conductor.steps.seq;

comment on column conductor.steps.seq is
  'The order steps were saved in (conductor.step_seq): the steps of a task before step X are those with a '
  'smaller seq. Rows from before v0.3.0 are numbered by (saved_at, task_id, name).';

create table conductor.forks (
  task_id   bigint primary key,
  source_id bigint not null,
  from_step text not null,
  forked_at timestamptz not null
);

comment on table conductor.forks is
  'Tasks copied by conductor.fork(): the source task (which may since have been pruned) and the step the copy '
  'was forked from. Deleted with the copy.';

grant select on conductor.forks to conductor_client, conductor_worker, conductor_admin;

commit;
