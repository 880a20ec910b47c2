-- A function that turns sequential or bitmap scans off adds PostgreSQL's disable_cost (1e10)
-- to any plan that still needs one, which passes every JIT threshold: on a server with JIT,
-- each such statement was compiled, 30 ms per complete_many and 350-590 ms per enqueue_many
-- of 50. So every function of the schema that turns scans off turns JIT off as well.
begin;
select plan(1);

select is_empty(
  $$select p.oid::regprocedure::text from pg_proc p
     where p.pronamespace = 'conductor'::regnamespace
       and ('enable_seqscan=off' = any(p.proconfig) or 'enable_bitmapscan=off' = any(p.proconfig))
       and not 'jit=off' = any(p.proconfig)$$,
  'Every conductor function that turns scans off also runs with jit = off.');

select * from finish();
rollback;
