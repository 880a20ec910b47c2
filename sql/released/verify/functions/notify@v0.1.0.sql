-- Verify conductor:functions/notify on pg

begin;

select 1 / count(*)::int
  from pg_catalog.pg_trigger
 where tgname = 'tasks_notify_inserted'
   and tgrelid = 'conductor.tasks'::regclass;

rollback;
