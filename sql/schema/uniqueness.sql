-- Deploy conductor:schema/uniqueness to pg
--
-- Uniqueness over time and by state, replace and debounce (issue 30): what a
-- task stores of its dedupe options, and the second arbiter of dedupe keys.
--
--   conductor._dedupe_spec               the options of one enqueue: dedupe_window,
--                                        dedupe_states, on_duplicate, debounce,
--                                        debounce_max (all NULL: today's dedupe)
--   conductor._task_spec.dedupe          the same, in a task to enqueue
--   conductor.tasks.dedupe_states        the statuses in which the task holds its
--                                        dedupe_key against enqueues of the same
--                                        period; NULL: the unfinished ones only
--                                        (tasks_dedupe_key, as before)
--   conductor.tasks.dedupe_until         the end of the task's dedupe period (an
--                                        aligned window), 'infinity' without one
--   conductor.tasks.debounce_until       a debounced task: the latest its run_at
--                                        may be pushed to ('infinity': no
--                                        debounce_max); NULL: not debounced
--   tasks_dedupe_held                    unique (dedupe_key, dedupe_until) among
--                                        the tasks in one of their dedupe_states
--
-- Two arbiters: tasks_dedupe_key (unchanged) holds a key for every unfinished
-- task; tasks_dedupe_held holds it, for a task enqueued with dedupe_window or
-- dedupe_states, also in the finished statuses it names, against enqueues of
-- the same period. dedupe_states always holds the unfinished statuses (enqueue
-- refuses less, QC121), so no row enters tasks_dedupe_held except at its
-- insert and at retry (which answers QC205 on a conflict, as before).
-- A task enqueued without these options has NULL in the three columns (a bit
-- of the null bitmap each) and no entry in tasks_dedupe_held.

begin;
set local role conductor_owner;

create type conductor._dedupe_spec as (
  dedupe_window interval,
  dedupe_states conductor.task_status[],
  on_duplicate  text,
  debounce      interval,
  debounce_max  interval
);
comment on type conductor._dedupe_spec is
  'The dedupe options of one enqueue (conductor.enqueue''s parameters of the same names); all NULL: '
  'a dedupe_key is held by an unfinished task only, and a duplicate enqueue is ignored.';

alter type conductor._task_spec add attribute dedupe conductor._dedupe_spec;

alter table conductor.tasks
  add column dedupe_states conductor.task_status[],
  add column dedupe_until timestamptz,
  add column debounce_until timestamptz;
comment on column conductor.tasks.dedupe_states is
  'The statuses in which the task holds its dedupe_key against enqueues of the same dedupe period '
  '(tasks_dedupe_held); NULL: only while unfinished (tasks_dedupe_key).';
comment on column conductor.tasks.dedupe_until is
  'The end of the task''s dedupe period (dedupe_window aligned on 2000-01-01 UTC), ''infinity'' '
  'when enqueued with dedupe_states but no window; NULL with dedupe_states.';
comment on column conductor.tasks.debounce_until is
  'A debounced task: the latest time an enqueue of its key may push its run_at to (first '
  'enqueue + debounce_max; ''infinity'': no maximum); NULL: not debounced.';

create unique index tasks_dedupe_held on conductor.tasks (dedupe_key, dedupe_until)
  where dedupe_states is not null and status = any (dedupe_states);

commit;
