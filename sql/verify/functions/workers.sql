-- Verify conductor:functions/workers on pg

begin;

select conductor.register_worker('verify-worker', 'host', 1, array['q'], 4, kinds => array['verify-kind']);
-- the registration is the caller's
select 1 / (count(*) = 1)::int from conductor.workers where id = 'verify-worker' and owner = conductor._caller();
select 1 / conductor.deregister_worker('verify-worker')::int;
select 1 / (count(*) = 1)::int from conductor.served_kinds where kind = 'verify-kind';

rollback;
