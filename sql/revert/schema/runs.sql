-- Revert conductor:schema/runs from pg

begin;

drop table conductor.events;
drop table conductor.steps;

commit;
