-- Revert conductor:schema/expiry from pg

begin;

drop table conductor.task_deadlines;
drop index conductor.tasks_unsuccessful;
create index tasks_unsuccessful on conductor.tasks (id)
  where status in ('failed', 'dead', 'timed_out');
alter type conductor._task_spec drop attribute expires_in;
alter table conductor.kinds drop column expires_in;
alter table conductor.schedules drop column expires_in;
alter table conductor.tasks drop column expires_at, drop column expires_in;

commit;
