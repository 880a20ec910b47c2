-- Verify conductor:functions/run_state on pg

begin;

select 1 / pg_catalog.has_function_privilege('conductor_worker', 'conductor.set_run_state(bigint, jsonb)', 'execute')::int;
select 1 / (not pg_catalog.has_function_privilege('conductor_client', 'conductor.set_run_state(bigint, jsonb)', 'execute'))::int;
select 1 / pg_catalog.has_function_privilege('conductor_client', 'conductor.run_state(bigint)', 'execute')::int;

rollback;
