-- Revert conductor:functions/retry from pg

begin;

drop function conductor.retry(bigint, boolean);

commit;
