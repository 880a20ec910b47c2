-- Verify conductor:functions/rewind on pg

begin;

select 1 / pg_catalog.has_function_privilege('conductor_client', 'conductor.rewind(bigint, text)', 'execute')::int;
select 1 / pg_catalog.has_function_privilege('conductor_client', 'conductor.fork(bigint, text)', 'execute')::int;
select 1 / (not pg_catalog.has_function_privilege('conductor_worker', 'conductor.rewind(bigint, text)', 'execute'))::int;
select 1 / (not pg_catalog.has_function_privilege('conductor_client', 'conductor._steps_from(bigint, text)', 'execute'))::int;

rollback;
