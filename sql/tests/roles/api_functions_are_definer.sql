-- Every function an application role may call is SECURITY DEFINER, except the few that
-- read no table beyond conductor.settings (the clock, the version, the status lists, cron
-- arithmetic, advisory lock keys), and PUBLIC may execute only those. Every function of the schema
-- pins search_path = pg_catalog, pg_temp, so a caller's search_path or pg_temp objects
-- cannot hijack it (sql/tests/roles/pg_temp_* try that as each role).
begin;
select plan(3);

create temp table pure_functions (name text);
insert into pure_functions values
  ('now'), ('version'), ('unfinished_statuses'), ('finished_statuses'), ('retryable_statuses'), ('cron_next'), ('cron_validate'), ('lead_key'), ('try_lead'), ('release_lead');

select is_empty(
  $$select p.oid::regprocedure::text
      from pg_proc p
     where p.pronamespace = 'conductor'::regnamespace
       and p.proname not in (select name from pure_functions)
       and (has_function_privilege('conductor_client', p.oid, 'EXECUTE')
            or has_function_privilege('conductor_worker', p.oid, 'EXECUTE')
            or has_function_privilege('conductor_admin', p.oid, 'EXECUTE'))
       and not p.prosecdef$$,
  'Every API function an application role may call runs as SECURITY DEFINER.');
select is_empty(
  $$select p.oid::regprocedure::text
      from pg_proc p
     where p.pronamespace = 'conductor'::regnamespace
       and not coalesce('search_path=pg_catalog, pg_temp' = any (p.proconfig), false)$$,
  'Every function of the schema pins search_path to pg_catalog, pg_temp (pg_temp last).');
select is_empty(
  $$select p.oid::regprocedure::text
      from pg_proc p
     where p.pronamespace = 'conductor'::regnamespace
       and p.proname not in (select name from pure_functions)
       and has_function_privilege('public', p.oid, 'EXECUTE')$$,
  'PUBLIC executes no conductor function beyond the pure ones.');

select * from finish();
rollback;
