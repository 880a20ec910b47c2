-- Deploy conductor:schema/task_checks to pg
--
-- conductor.tasks keeps the CHECK constraints that guard the engine's state
-- machine (tasks_running_has_lease, tasks_finished_when_terminal) and drops
-- the five that restated the rules of a task: a non-empty kind, an object
-- payload, attempts and recoveries in range, a known wait_for. Those are
-- enforced where tasks are written: enqueue's rules (conductor._spec_problem,
-- applied by every path that inserts a task), and the functions that count
-- attempts and recoveries or suspend a run. PostgreSQL parses every CHECK
-- expression of a table from its stored text at the start of each statement
-- that writes it; the five cost a fifth of a single enqueue's CPU (issue 16,
-- bench/RESULTS.md), for a check the engine had already made.

begin;
set local role conductor_owner;

alter table conductor.tasks
  drop constraint tasks_kind_not_empty,
  drop constraint tasks_payload_is_object,
  drop constraint tasks_attempts_valid,
  drop constraint tasks_recoveries_valid,
  drop constraint tasks_wait_for_valid;

commit;
