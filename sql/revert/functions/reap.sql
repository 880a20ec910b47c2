-- Revert conductor:functions/reap from pg

begin;

drop function conductor.reap(interval);

commit;
