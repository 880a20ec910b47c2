-- Revert conductor:schema/uniqueness from pg

begin;

drop index conductor.tasks_dedupe_held;
alter table conductor.tasks drop column debounce_until, drop column dedupe_until, drop column dedupe_states;
alter type conductor._task_spec drop attribute dedupe;
drop type conductor._dedupe_spec;

commit;
