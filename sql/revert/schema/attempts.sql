-- Revert conductor:schema/attempts from pg

begin;

drop table conductor.attempts;

commit;
