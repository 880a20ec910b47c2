-- Deploy conductor:schema/run_states to pg
--
-- Queries (issue 31): a running handler publishes a value at any point
-- (set_run_state, fenced by its attempt as save_step is), and a client reads the
-- latest one (run_state) while the run runs, waits or after it ended.
--
--   conductor.run_states   one row per task that published: the value, when and by
--                          which attempt; the latest write wins; deleted with the task
--                          (prune's _delete_tasks; no foreign key: its triggers would
--                          run at every update of a task, the hot path)

begin;
set local role conductor_owner;

create table conductor.run_states (
  task_id    bigint primary key,
  state      jsonb,
  set_at     timestamptz not null,
  attempt_id bigint not null
);

comment on table conductor.run_states is
  'The state a task''s handler last published (conductor.set_run_state): read with conductor.run_state(). '
  'Deleted with the task.';

grant select on conductor.run_states to conductor_client, conductor_worker, conductor_admin;

commit;
