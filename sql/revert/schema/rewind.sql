-- Revert conductor:schema/rewind from pg

begin;

drop table conductor.forks;

commit;
