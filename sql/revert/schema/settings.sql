-- Revert conductor:schema/settings from pg

begin;

drop table conductor.settings;

commit;
