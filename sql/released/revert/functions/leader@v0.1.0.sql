-- Revert conductor:functions/leader from pg

begin;

drop function conductor.leaders(text[]);
drop function conductor.release_lead(text);
drop function conductor.try_lead(text);
drop function conductor.lead_key(text);

commit;
