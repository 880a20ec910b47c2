-- Revert conductor:schema/run_states from pg

begin;

drop table conductor.run_states;

commit;
