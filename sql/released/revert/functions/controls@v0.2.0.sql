-- Revert conductor:functions/controls from pg
--
-- The functions go; the tables (schema/operations) and what they hold stay
-- until that change is reverted: claim, reverted later, no longer reads them.

begin;

drop function conductor.set_rate_limit(text, text, double precision, double precision);
drop function conductor.resume_queue(text);
drop function conductor.pause_queue(text);
drop function conductor._check_control_target(text, text);

commit;
