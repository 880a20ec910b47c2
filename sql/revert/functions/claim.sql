-- Revert conductor:functions/claim from pg

begin;

drop function conductor.claim(text, text[], integer, interval);
drop function conductor._claim_slow_scan();

commit;
