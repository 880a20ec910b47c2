-- Revert conductor:schema/coordination from pg

begin;

drop table conductor.exclusive_locks;
drop table conductor.concurrency_slots;
drop table conductor.leader_leases;

commit;
