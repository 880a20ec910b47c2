-- Verify conductor:functions/leader on pg

begin;

-- a lease: taken, listed, refused to another holder, renewed, released
select 1 / conductor.try_lead('verify-lead', 'verify-holder', interval '10 seconds')::int;
select 1 / (count(*) = 1)::int from conductor.leaders(array['verify-lead']) where holder = 'verify-holder';
select 1 / (not conductor.try_lead('verify-lead', 'verify-other', interval '10 seconds'))::int;
select 1 / conductor.try_lead('verify-lead', 'verify-holder', interval '10 seconds')::int;
select 1 / conductor.release_lead('verify-lead', 'verify-holder')::int;
select 1 / (count(*) = 0)::int from conductor.leaders(array['verify-lead']);
-- v0.2.0's signature: a lease of this session
select 1 / conductor.try_lead('verify-lead')::int;
select 1 / (count(*) = 1)::int from conductor.leaders(array['verify-lead']) where pid = pg_catalog.pg_backend_pid();
select 1 / conductor.release_lead('verify-lead')::int;
select count(*) from conductor.foreign_lock_holders(interval '0');
-- granted as documented
select 1 / pg_catalog.has_function_privilege('conductor_worker', 'conductor.try_lead(text, text, interval)', 'execute')::int;
select 1 / (not pg_catalog.has_function_privilege('conductor_client', 'conductor.try_lead(text, text, interval)', 'execute'))::int;
select 1 / pg_catalog.has_function_privilege('conductor_worker', 'conductor.foreign_lock_holders(interval)', 'execute')::int;
select 1 / (not pg_catalog.has_function_privilege('conductor_client', 'conductor.foreign_lock_holders(interval)', 'execute'))::int;
select 1 / pg_catalog.has_function_privilege('conductor_client', 'conductor.leaders(text[])', 'execute')::int;

rollback;
