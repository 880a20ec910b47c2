-- Verify conductor:functions/workers on pg

begin;

select conductor.register_worker('verify-worker', 'host', 1, array['q'], 4);
select 1 / conductor.deregister_worker('verify-worker')::int;

rollback;
