-- Revert conductor:functions/retention from pg

begin;

drop function conductor.save_log(bigint, jsonb, integer);
drop function conductor.apply_retention(integer);
drop function conductor._retention_cutoff(timestamptz, interval);

commit;
