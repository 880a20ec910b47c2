-- Revert conductor:functions/run_state from pg

begin;

drop function conductor.run_state(bigint);
drop function conductor.set_run_state(bigint, jsonb);

commit;
