-- Revert conductor:schema/wakeups from pg

begin;

drop table conductor.result_waiters;
drop table conductor.sleepers;

commit;
