-- claim's pick from one queue (conductor._pick_queue) keeps one plan per
-- connection, and that plan must stay a scan of tasks_ready_by_queue. The
-- case that broke a plain "queue = q" statement: the plan is made while one
-- queue fills the table (statistics say every task has that queue), then a
-- second, larger queue of higher priority arrives. A claim from the first
-- queue must not step through the other queue's tasks: it fetches a handful
-- of heap rows, not thousands (pg_stat_xact_user_tables.idx_tup_fetch counts
-- this transaction's). Full scans count as fast here, so no claim remembers a
-- position by itself. The picks from a remembered position (_pick_queue's
-- stages 1 and 2, each a statement and a plan of its own, made from the same
-- stale statistics) must stay on that index too: the test then writes a position by
-- hand (a row of conductor.claim_positions), and claims again; its stage 1 asks for tasks of
-- the queue above the position's priority, which tasks_ready would answer by
-- stepping through the other queue.
begin;
select plan(6);
\ir ../helpers.psql
update conductor.settings set claim_slow_scan = '1 hour';

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

-- the position after the next task of 'pick-solo', valid for a long while
insert into conductor.claim_positions (worker_id, scope, priority, run_at, task_id, until)
  select 'pick-w', 'pick-solo', t.priority, t.run_at, t.id, extract(epoch from clock_timestamp() + interval '1 hour')
    from conductor.tasks t where t.queue = 'pick-solo' and t.status = 'queued' order by t.id limit 1;
truncate fetched_before;
insert into fetched_before
  select idx_tup_fetch from pg_stat_xact_user_tables where relid = 'conductor.tasks'::regclass;

select is((select count(*) from conductor.claim('pick-w', array['pick-solo'], 1)),
  1::bigint, 'A claim from a remembered position leased a task of that queue.');
select is((select p.scope || '|' || p.priority from conductor.claim_positions p
            where p.worker_id = 'pick-w' order by p.seq desc limit 1), 'pick-solo|0',
  'The position was in use (kept, not cleared).');
select cmp_ok((select s.idx_tup_fetch - b.idx_tup_fetch
                 from pg_stat_xact_user_tables s, fetched_before b
                where s.relid = 'conductor.tasks'::regclass),
  '<', 50::bigint,
  'From the position too it fetched a handful of rows, not the other queue''s 5,000.');

select * from finish();
rollback;
