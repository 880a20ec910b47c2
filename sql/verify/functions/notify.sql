-- Verify conductor:functions/notify on pg

begin;

select 1 / count(*)::int
  from pg_catalog.pg_proc
 where pronamespace = 'conductor'::regnamespace
   and proname in ('sleep', 'wake', 'watch', 'unwatch', '_notify_queue', '_notify_done')
having count(*) = 6;

-- watch() waits out a completion in flight for at most lock_timeout
select 1 / (count(*) = 1)::int from pg_catalog.pg_proc
 where oid = 'conductor.watch(bigint)'::regprocedure and 'lock_timeout=1s' = any (proconfig);

rollback;
