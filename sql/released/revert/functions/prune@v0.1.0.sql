-- Revert conductor:functions/prune from pg

begin;

drop function conductor.prune(interval, boolean, integer);
drop index conductor.schedule_fires_task;

commit;
