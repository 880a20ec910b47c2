-- Revert conductor:schema/updates from pg

begin;

drop table conductor.updates;

commit;
