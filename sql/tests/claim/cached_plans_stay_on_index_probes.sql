-- The hot path's helpers keep one plan per connection (conductor._claim_keys,
-- conductor._lease, conductor._complete: plan_cache_mode = force_generic_plan).
-- A plan made while the tables were empty must not scan them once they have
-- grown: those helpers disable sequential scans, hash and merge joins, so their
-- plans are index probes whatever the statistics said. Staged in one session:
-- empty analysed tables, one claim and complete_many (the plans are made), then
-- 5,000 tasks written without ANALYZE; the next claim and complete_many of 50
-- must not scan conductor.tasks, conductor.attempts or conductor.workers
-- sequentially (pg_stat_xact_user_tables counts this transaction's scans).
begin;
select plan(5);
\ir ../helpers.psql

analyze conductor.tasks;
analyze conductor.attempts;
analyze conductor.workers;
select conductor.register_worker('plans-w', 'host', 1, null, 4, array['worker'], 'v', '{}');

-- the first calls make the plans, on empty tables (a keyed task, so the key probe runs too)
select conductor.enqueue('k', '{}', 'plans-q', concurrency_key => 'key-1');
select count(*) from conductor.complete_many(
  (select array_agg(attempt_id) from conductor.claim('plans-w', array['plans-q'], 5)));

select count(*) from conductor.enqueue_many(
  (select jsonb_agg(jsonb_build_object('kind', 'k', 'queue', 'plans-q', 'concurrency_key',
                                       case when i % 25 = 0 then 'key-' || i end))
     from generate_series(1, 5000) i));

select conductor_tests.seq_scans('tasks') as tasks_scans, conductor_tests.seq_scans('attempts') as attempts_scans,
       conductor_tests.seq_scans('workers') as workers_scans \gset

select count(*) from conductor.complete_many(
  (select array_agg(attempt_id) from conductor.claim('plans-w', array['plans-q'], 50)));

-- counted before the checks below, which scan conductor.tasks themselves
select conductor_tests.seq_scans('tasks') - :tasks_scans as new_tasks_scans,
       conductor_tests.seq_scans('attempts') - :attempts_scans as new_attempts_scans,
       conductor_tests.seq_scans('workers') - :workers_scans as new_workers_scans \gset

select is((select count(*) from conductor.tasks where queue = 'plans-q' and status = 'succeeded'),
  51::bigint, 'The second claim and complete_many finished 50 tasks.');
select is((select count(*) from conductor.tasks
            where queue = 'plans-q' and status = 'succeeded' and concurrency_key is not null),
  3::bigint, 'The keyed tasks among them came through the key probe (key-25, key-50, and key-1 before).');

select is(:new_tasks_scans::bigint, 0::bigint,
  'No sequential scan of conductor.tasks after it grew.');
select is(:new_attempts_scans::bigint, 0::bigint,
  'No sequential scan of conductor.attempts.');
select is(:new_workers_scans::bigint, 0::bigint,
  'No sequential scan of conductor.workers.');

select * from finish();
rollback;
