-- Revert conductor:functions/fail from pg

begin;

drop function conductor.fail(bigint, text, timestamptz, text, boolean);

commit;
