-- Verify conductor:functions/notify on pg

begin;

select 1 / count(*)::int
  from pg_catalog.pg_proc
 where pronamespace = 'conductor'::regnamespace
   and proname in ('sleep', 'wake', 'watch', 'unwatch', '_notify_queue', '_notify_done')
having count(*) = 6;

rollback;
