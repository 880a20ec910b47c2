-- Revert conductor:schema/task_checks from pg: v0.1.0's five checks again

begin;

alter table conductor.tasks
  add constraint tasks_kind_not_empty check (kind <> ''),
  add constraint tasks_payload_is_object check (jsonb_typeof(payload) = 'object'),
  add constraint tasks_attempts_valid check (max_attempts >= 1 and attempt >= 0),
  add constraint tasks_recoveries_valid check (max_recoveries >= 0 and recoveries >= 0),
  add constraint tasks_wait_for_valid check (
    wait_for in ('children_all', 'children_any', 'event', 'sleep'));

commit;
