-- Verify conductor:schema/run_states on pg

begin;

select task_id::bigint, state::jsonb, set_at::timestamptz, attempt_id::bigint from conductor.run_states where false;
select 1 / (not pg_catalog.has_table_privilege('conductor_worker', 'conductor.run_states', 'insert'))::int;

rollback;
