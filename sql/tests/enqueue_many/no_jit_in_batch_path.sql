-- conductor._enqueue turns sequential and bitmap scans off, which adds PostgreSQL's
-- disable_cost (1e10) to any plan that still has to use one (conductor.settings has no other
-- path): every such plan then passes jit_above_cost, and on a server with JIT each statement
-- was compiled (measured: an enqueue_many of 50 tasks took 350-590 ms instead of 3 ms). The
-- function therefore also switches JIT off.
begin;
select plan(2);

select ok((select 'jit=off' = any(p.proconfig) from pg_proc p
            where p.oid = 'conductor._enqueue(conductor._task_spec[])'::regprocedure),
  'conductor._enqueue runs with jit = off.');
select is_empty(
  $$select p.oid::regprocedure::text from pg_proc p
     where p.oid in ('conductor._enqueue(conductor._task_spec[])'::regprocedure,
                     'conductor.enqueue_many(jsonb)'::regprocedure,
                     'conductor.enqueue(text, jsonb, text, integer, timestamptz, integer, text, text, bigint, integer, interval, double precision, interval, interval, text, integer, interval, text[], text, interval, interval, interval, text)'::regprocedure)
       and ('enable_seqscan=off' = any(p.proconfig) or 'enable_bitmapscan=off' = any(p.proconfig))
       and not 'jit=off' = any(p.proconfig)$$,
  'No enqueue function turns scans off without turning JIT off.');

select * from finish();
rollback;
