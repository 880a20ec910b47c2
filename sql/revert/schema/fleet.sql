-- Revert conductor:schema/fleet from pg

begin;

drop table conductor.maintenance;
drop table conductor.served_kinds;
alter table conductor.settings drop column unknown_kind_after;
alter type conductor.claimed_task drop attribute timeout;
alter type conductor._task_spec drop attribute timeout;
alter table conductor.tasks drop column timeout;
alter table conductor.kinds
  drop column timeout,
  drop column concurrency_key,
  drop column priority,
  drop column queue;
alter table conductor.workers drop column kinds;

commit;
