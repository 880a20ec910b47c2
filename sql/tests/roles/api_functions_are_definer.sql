-- Every function an application role may call is SECURITY DEFINER with search_path pinned
-- to '' (so a caller's search_path cannot hijack it), except the few that read no table
-- (the clock, cron arithmetic, advisory lock keys), and PUBLIC may execute only those.
begin;
select plan(3);

create temp table pure_functions (name text);
insert into pure_functions values
  ('now'), ('cron_next'), ('cron_validate'), ('lead_key'), ('try_lead'), ('release_lead');

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
     where p.pronamespace = 'conductor'::regnamespace and p.prosecdef
       and not coalesce('search_path=""' = any (p.proconfig), false)$$,
  'Every SECURITY DEFINER function pins search_path to the empty string.');
select is_empty(
  $$select p.oid::regprocedure::text
      from pg_proc p
     where p.pronamespace = 'conductor'::regnamespace
       and p.proname not in (select name from pure_functions)
       and has_function_privilege('public', p.oid, 'EXECUTE')$$,
  'PUBLIC executes no conductor function beyond the pure ones.');

select * from finish();
rollback;
