-- Revert conductor:functions/stats from pg

begin;

drop function conductor.stats();
drop index conductor.tasks_finished;

commit;
