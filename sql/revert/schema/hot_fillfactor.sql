-- Revert conductor:schema/hot_fillfactor from pg

begin;
set local role conductor_owner;

alter table conductor.tasks set (fillfactor = 80);
alter table conductor.attempts set (fillfactor = 85);

commit;
