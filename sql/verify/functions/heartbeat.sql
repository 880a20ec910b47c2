-- Verify conductor:functions/heartbeat on pg

begin;

select conductor.enqueue('verify', queue => 'verify-heartbeat');
select 1 / (count(*) = 0)::int
  from conductor.heartbeat('verify-worker',
         array(select c.attempt_id from conductor.claim('verify-worker', array['verify-heartbeat']) c));
select 1 / (count(*) = 1)::int from conductor.heartbeat('verify-worker', array[-1::bigint]);

-- a beat never waits on a row another session holds: bounded by lock_timeout as well
select 1 / (count(*) = 1)::int from pg_catalog.pg_proc
 where oid = 'conductor.heartbeat(text, bigint[], interval)'::regprocedure and 'lock_timeout=5s' = any (proconfig);

rollback;
