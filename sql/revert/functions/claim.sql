-- Revert conductor:functions/claim from pg

begin;

drop function conductor.claim(text, text[], integer, interval);

commit;
