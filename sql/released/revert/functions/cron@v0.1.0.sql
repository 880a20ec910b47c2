-- Revert conductor:functions/cron from pg

begin;

drop function conductor.cron_next(text, timestamptz, text);
drop function conductor.cron_validate(text);
drop function conductor._cron_next_parsed(integer[], timestamptz, text);
drop function conductor._cron_instants(timestamp, text);
drop function conductor._cron_transition(timestamptz, timestamptz, text);
drop function conductor._cron_next_local(integer[], timestamp);
drop function conductor._cron_parse(text);
drop function conductor._cron_next_values(integer[], integer, integer);
drop function conductor._cron_field(text, text, text, integer, integer, text[]);

commit;
