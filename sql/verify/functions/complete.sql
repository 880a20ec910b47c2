-- Verify conductor:functions/complete on pg

begin;

select conductor.enqueue('verify', queue => 'verify-complete');
select conductor.complete(c.attempt_id, '{"ok": true}')
  from conductor.claim('verify-worker', array['verify-complete']) c;
select 1 / (count(*) = 1)::int
  from conductor.tasks where queue = 'verify-complete' and status = 'succeeded';

-- a report never waits on a row another session holds: bounded by lock_timeout as well
select 1 / (count(*) = 1)::int from pg_catalog.pg_proc
 where oid = 'conductor._complete(bigint[], jsonb[])'::regprocedure and 'lock_timeout=200ms' = any (proconfig);

rollback;
