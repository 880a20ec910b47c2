-- Revert conductor:functions/kinds from pg

begin;

drop function conductor.configure_kind(text, integer, integer, interval, double precision, interval);

commit;
