-- Revert conductor:functions/release from pg

begin;

drop function conductor.release(bigint);

commit;
