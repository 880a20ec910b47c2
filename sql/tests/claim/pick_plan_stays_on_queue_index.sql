-- claim's pick from one queue (conductor._pick_queue) keeps one plan per
-- connection, and that plan must stay a scan of tasks_ready_by_queue. The
-- case that broke a plain "queue = q" statement: the plan is made while one
-- queue fills the table (statistics say every task has that queue), then a
-- second, larger queue of higher priority arrives. A claim from the first
-- queue must not step through the other queue's tasks: it fetches a handful
-- of heap rows, not thousands (pg_stat_xact_user_tables.idx_tup_fetch counts
-- this transaction's). Full scans count as fast here, so no claim remembers a
-- position (that path is planned per call, and tested on its own).
begin;
select plan(3);
\ir ../helpers.psql
set local conductor.claim_slow_scan = '1 hour';

select count(*) from conductor.enqueue_many(
  (select jsonb_agg(jsonb_build_object('kind', 'k', 'queue', 'pick-solo')) from generate_series(1, 200)));
analyze conductor.tasks;

-- the first claim makes the plan, while 'pick-solo' is the only queue
select is((select count(*) from conductor.claim('pick-w', array['pick-solo'], 1)),
  1::bigint, 'The first claim from the only queue leased a task.');

select count(*) from conductor.enqueue_many(
  (select jsonb_agg(jsonb_build_object('kind', 'k', 'queue', 'pick-crowd', 'priority', 5))
     from generate_series(1, 5000)));

create temporary table fetched_before as
  select idx_tup_fetch from pg_stat_xact_user_tables where relid = 'conductor.tasks'::regclass;

select is((select count(*) from conductor.claim('pick-w', array['pick-solo'], 1)),
  1::bigint, 'The next claim from that queue leased a task.');

select cmp_ok((select s.idx_tup_fetch - b.idx_tup_fetch
                 from pg_stat_xact_user_tables s, fetched_before b
                where s.relid = 'conductor.tasks'::regclass),
  '<', 50::bigint,
  'It fetched a handful of rows, not the 5,000 tasks of the other queue ahead of them in tasks_ready.');

select * from finish();
rollback;
