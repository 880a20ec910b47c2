-- Revert conductor:functions/timeline from pg

begin;
set local role conductor_owner;

drop function conductor.run_timeline(bigint, integer);

commit;
