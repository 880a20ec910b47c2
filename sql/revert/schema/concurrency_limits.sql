-- Revert conductor:schema/concurrency_limits from pg

begin;

drop index conductor.tasks_ready_by_key;
alter type conductor._task_spec drop attribute concurrency_limit;
alter table conductor.schedules drop column concurrency_limit;
alter table conductor.kinds drop column concurrency_limit;
alter table conductor.tasks drop column concurrency_limit;

commit;
