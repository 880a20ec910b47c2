-- Deploy conductor:schema/rewind to pg
--
-- Rewind and fork (issue 31): restart a run from a chosen step, keeping the steps
-- saved before it, or copy a run from a step.
--
--   conductor.steps.seq   (schema/code_versions) the order steps were saved in: "the
--                         steps before step X" are those of the task with a smaller seq.
--                         saved_at cannot say it: the steps of one transaction, or of a
--                         fake clock, share a time.
--   conductor.forks       one row per task that conductor.fork() copied from another:
--                         its source and the step it was forked from (get_task shows
--                         them); deleted with the task (prune's _delete_tasks; no
--                         foreign key: its triggers would run at every update of a task)
--

begin;
set local role conductor_owner;

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
