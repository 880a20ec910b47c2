-- Verify conductor:schema/claim_epoch on pg

begin;

select one::boolean, started_at::timestamptz from conductor.claim_epoch where false;
select 1 / (relpersistence = 'u')::integer from pg_catalog.pg_class
 where oid = 'conductor.claim_epoch'::regclass;
select 1 / (not pg_catalog.has_table_privilege('conductor_worker', 'conductor.claim_epoch', 'insert'))::integer;

rollback;
