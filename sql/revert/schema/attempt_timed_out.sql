-- Revert conductor:schema/attempt_timed_out from pg

begin;

alter table conductor.attempts drop column timed_out;

commit;
