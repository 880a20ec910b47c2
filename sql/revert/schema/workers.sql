-- Revert conductor:schema/workers from pg

begin;

drop table conductor.workers;

commit;
