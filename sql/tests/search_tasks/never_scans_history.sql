-- search_tasks never scans conductor.tasks sequentially, whatever the filter: each source
-- is an index (its settings price sequential scans out, and JIT off with them).
begin;
select plan(4);
\ir ../helpers.psql
\ir fixture.psql
analyze conductor.tasks;

select ok((select 'enable_seqscan=off' = any(p.proconfig) and 'jit=off' = any(p.proconfig) from pg_proc p
            where p.oid = 'conductor.search_tasks(text, text, text, text, jsonb, timestamptz, timestamptz, timestamptz, timestamptz, bigint, integer, integer)'::regprocedure),
  'search_tasks runs with sequential scans off and JIT off.');

select ok((select 'plan_cache_mode=force_custom_plan' = any(p.proconfig) from pg_proc p
            where p.oid = 'conductor.search_tasks(text, text, text, text, jsonb, timestamptz, timestamptz, timestamptz, timestamptz, bigint, integer, integer)'::regprocedure),
  'search_tasks plans each statement for its values (no generic plan after five calls).');

select conductor_tests.seq_scans('tasks') as scans_before \gset
select count(*) from (
  select * from conductor.search_tasks(kind => 'sr-a')
  union all select * from conductor.search_tasks(queue => 'sr', before_id => :a4, scan_limit => 2)
  union all select * from conductor.search_tasks(status => 'queued')
  union all select * from conductor.search_tasks(status => 'running')
  union all select * from conductor.search_tasks(status => 'waiting')
  union all select * from conductor.search_tasks(status => 'failed')
  union all select * from conductor.search_tasks(status => 'succeeded')
  union all select * from conductor.search_tasks(dedupe_key => 'dk-1')
  union all select * from conductor.search_tasks(dedupe_key => 'dk-1', status => 'queued')
  union all select * from conductor.search_tasks(payload_contains => '{"tag": "x"}')
  union all select * from conductor.search_tasks(enqueued_after => '2031-01-01 01:00:00+00',
                                                 enqueued_before => '2031-01-01 03:00:00+00')
  union all select * from conductor.search_tasks(finished_after => '2031-01-01 01:00:00+00')
  union all select * from conductor.search_tasks(finished_after => '2031-01-01 01:00:00+00', scan_limit => 1)
) s \gset
select is(conductor_tests.seq_scans('tasks') - :scans_before, 0::bigint,
  'No search, by any filter or source, scanned conductor.tasks sequentially.');

-- _enqueued_id_bound, a binary search: the first id enqueued at or after a time
select is(conductor._enqueued_id_bound('2031-01-01 01:00:00+00'), :b1::bigint,
  'The id bound of 01:00 is b1, the first task enqueued then.');

select * from finish();
rollback;
