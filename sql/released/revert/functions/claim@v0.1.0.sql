-- Revert conductor:functions/claim from pg

begin;

drop function conductor.claim(text, text[], integer, interval);
drop function conductor._pick_queue(text, integer, timestamptz, integer, integer, timestamptz, bigint, bigint[]);
drop function conductor._lease(bigint[], bigint[], text, timestamptz, timestamptz);
drop function conductor._claim_keys(text[], integer, timestamptz);
drop function conductor._claim_slow_scan();
drop type conductor.claimed_task;

commit;
