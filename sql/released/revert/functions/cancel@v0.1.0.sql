-- Revert conductor:functions/cancel from pg

begin;

drop function conductor.cancel(bigint);

commit;
