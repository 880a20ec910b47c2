-- Verify conductor:functions/complete_in_transaction on pg

begin;

select conductor.enqueue('verify-complete-in-transaction', queue => 'verify-complete-in-transaction') as id \gset
select c.attempt_id from conductor.claim(worker_id => 'verify-complete-in-transaction',
  queues => array['verify-complete-in-transaction']) c \gset
select conductor.complete_in_transaction(:attempt_id, '{"verify": 1}');
select 1 / (t.status::text = 'succeeded' and t.result = '{"verify": 1}')::int
  from conductor.tasks t where t.id = :id;
do $$
begin
  perform conductor.complete_in_transaction(-1);
  raise exception 'complete_in_transaction accepted an attempt that does not exist';
exception when sqlstate 'QC203' then
  null;
end
$$;
select 1 / pg_catalog.has_function_privilege('conductor_worker',
  'conductor.complete_in_transaction(bigint, jsonb)', 'execute')::int;
select 1 / (not pg_catalog.has_function_privilege('conductor_client',
  'conductor.complete_in_transaction(bigint, jsonb)', 'execute'))::int;

rollback;
