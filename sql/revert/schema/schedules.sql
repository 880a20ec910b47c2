-- Revert conductor:schema/schedules from pg

begin;

drop table conductor.schedule_fires;
drop table conductor.schedules;

commit;
