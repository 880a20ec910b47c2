-- Verify conductor:schema/run_recoveries on pg

begin;

select root_id::bigint, recoveries::integer, stopped::bigint[] from conductor.run_recoveries where false;
select max_run_recoveries::integer from conductor.settings;
select pending::boolean, pending_horizon::xid8 from conductor.events where false;
select 1 / (not pg_catalog.has_table_privilege('conductor_worker', 'conductor.run_recoveries', 'update'))::int;
select 1 / pg_catalog.has_table_privilege('conductor_client', 'conductor.run_recoveries', 'select')::int;

rollback;
