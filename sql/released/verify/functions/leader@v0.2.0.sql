-- Verify conductor:functions/leader on pg

begin;

select 1 / conductor.try_lead('verify-lead')::int;
select 1 / (count(*) = 1)::int from conductor.leaders(array['verify-lead']) where pid = pg_catalog.pg_backend_pid();
select 1 / conductor.release_lead('verify-lead')::int;

rollback;
