-- Revert conductor:schema/run_recoveries from pg

begin;

drop index conductor.events_pending;
alter table conductor.events drop column pending_horizon, drop column pending;
alter table conductor.settings drop column max_run_recoveries;
drop table conductor.run_recoveries;

commit;
