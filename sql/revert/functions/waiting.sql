-- Revert conductor:functions/waiting from pg

begin;
set local role conductor_owner;

drop function conductor.waiting_reasons(text);
drop function conductor.why_waiting(bigint[]);
drop function conductor._wait_reasons(text, text, timestamptz, text, timestamptz, timestamptz, integer, text, text);

commit;
