-- Revert conductor:schema/kinds from pg

begin;

drop table conductor.kinds;

commit;
