-- Revert conductor:schema/traceparent from pg

begin;

alter type conductor.claimed_task drop attribute traceparent;
alter type conductor._task_spec drop attribute traceparent;
alter table conductor.tasks drop column traceparent;

commit;
