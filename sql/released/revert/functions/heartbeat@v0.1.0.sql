-- Revert conductor:functions/heartbeat from pg

begin;

drop function conductor.heartbeat(text, bigint[], interval);

commit;
