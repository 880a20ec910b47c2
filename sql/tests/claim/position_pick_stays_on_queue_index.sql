-- claim's pick from a remembered position (stages 1 and 2, planned per call)
-- must scan tasks_ready_by_queue when it claims from one queue, even when the
-- statistics are stale. The case: statistics taken while one queue filled the
-- table (every task has that queue), then a second, larger queue of higher
-- priority arrives. Stage 1 asks for tasks of that queue above the
-- position's priority; read from tasks_ready, whose order ignores the queue,
-- it would step through every task of the other queue. It fetches a handful
-- of heap rows, not thousands (pg_stat_xact_user_tables.idx_tup_fetch counts
-- this transaction's). The position is set by hand, as claim writes it.
begin;
select plan(3);
\ir ../helpers.psql
set local conductor.claim_slow_scan = '1 hour';

select count(*) from conductor.enqueue_many(
  (select jsonb_agg(jsonb_build_object('kind', 'k', 'queue', 'pos-solo')) from generate_series(1, 200)));
analyze conductor.tasks;

select count(*) from conductor.enqueue_many(
  (select jsonb_agg(jsonb_build_object('kind', 'k', 'queue', 'pos-crowd', 'priority', 5))
     from generate_series(1, 5000)));

-- the position after the first task of 'pos-solo', valid for a long while
select set_config('conductor.claim_position',
  (select concat_ws('|', 'pos-solo', t.priority, (extract(epoch from t.run_at) * 1000000)::bigint, t.id,
                    extract(epoch from now() + interval '1 hour'))
     from conductor.tasks t where t.queue = 'pos-solo' order by t.id limit 1), false);

create temporary table fetched_before as
  select idx_tup_fetch from pg_stat_xact_user_tables where relid = 'conductor.tasks'::regclass;

select is((select count(*) from conductor.claim('pos-w', array['pos-solo'], 1)),
  1::bigint, 'A claim from that queue leased a task from the position.');
select matches(current_setting('conductor.claim_position'), '^pos-solo\|0\|',
  'The position was in use (kept, not cleared).');

select cmp_ok((select s.idx_tup_fetch - b.idx_tup_fetch
                 from pg_stat_xact_user_tables s, fetched_before b
                where s.relid = 'conductor.tasks'::regclass),
  '<', 50::bigint,
  'It fetched a handful of rows, not the 5,000 tasks of the other queue ahead of them in tasks_ready.');

select * from finish();
rollback;
