-- Revert conductor:functions/reap from pg

begin;

drop function conductor.next_wake();
drop function conductor.reap(interval);

commit;
