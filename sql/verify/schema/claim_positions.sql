-- Verify conductor:schema/claim_positions on pg

begin;

select worker_id::text, seq::bigint, scope::text, priority::integer, run_at::timestamptz, task_id::bigint,
       until::float8
  from conductor.claim_positions where false;
select 1 / (relpersistence = 'u')::integer from pg_catalog.pg_class
 where oid = 'conductor.claim_positions'::regclass;
select 1 / (relpersistence = 'p')::integer from pg_catalog.pg_class
 where oid = 'conductor.claim_positions_seq'::regclass;

rollback;
