-- Deploy conductor:schema/hot_checks to pg
--
-- The state machine's invariants move from CHECK constraints to the tests
-- (issue 26), as enqueue's rules did in schema/task_checks:
--
--   conductor.tasks      tasks_running_has_lease       (running <=> a lease; running => an attempt)
--                        tasks_finished_when_terminal  (unfinished <=> no finished_at)
--   conductor.attempts   attempts_outcome_valid        (a known outcome)
--                        attempts_finished_with_outcome (an outcome <=> finished_at)
--
-- PostgreSQL parses every CHECK expression of a table from its stored text, and
-- prepares it, at the start of each statement that writes the table: claim and
-- complete write both tables, so a claim and its report parsed these four four
-- times. Counted in CPU instructions (bench/instructions.sh's method, the same
-- server with and without them): claims of 16 and complete_many, 407,503 ->
-- 381,930 a task (-6 %); a claim of one and its complete, 3,399,202 -> 3,051,833
-- (-10 %). Only the engine's functions write these tables (no role has a grant to
-- write them), and every one of them keeps the invariants: the pgTAP file
-- sql/tests/schema/state_machine_keeps_its_invariants.sql drives a task through
-- every transition (claim, complete, fail and its retry, release, suspend and the
-- wake-up, an event, cancel, retry, a lost lease, a time limit, an unknown kind)
-- and checks the four on every row after each, so a function that broke one fails
-- the suite instead of a worker's call.

begin;
set local role conductor_owner;

alter table conductor.tasks
  drop constraint tasks_running_has_lease,
  drop constraint tasks_finished_when_terminal;
alter table conductor.attempts
  drop constraint attempts_outcome_valid,
  drop constraint attempts_finished_with_outcome;

commit;
