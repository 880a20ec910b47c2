-- A claim with concurrency keys reads the heads of the indexes it needs, whatever the
-- backlog: the key probe checks each candidate's key with one probe of tasks_running_keyed
-- (v0.2.0's anti-join read every running keyed task for every candidate) and the keyed
-- pick reads a ready index in claim order up to its limit (v0.2.0 planned a sequential or
-- bitmap scan of the whole queue and a sort: with 200,000 keyed tasks ready, 75 ms for a
-- claim of 50, and a claim of 50 spent 2 s in the probe with 100,000 ready and 100
-- running: bench/keys.sh). 300 keyed tasks run and 3,000 wait; a claim of 5 is counted
-- with this transaction's statistics of the indexes and tables.
begin;
select plan(4);
\ir ../helpers.psql

-- (at a lower priority: the index entries their claim left behind sit at the ready indexes' tail)
select count(*) from (select conductor.enqueue('k', '{}', 'probe-q', priority => -1, concurrency_key => 'run-' || i)
                        from generate_series(1, 300) i) x;
select count(*) from conductor.claim('w-run', array['probe-q'], 300);
select count(*) from (select conductor.enqueue('k', '{}', 'probe-q', concurrency_key => 'ready-' || i) from generate_series(1, 3000) i) x;
analyze conductor.tasks;
select pg_stat_get_xact_tuples_returned('conductor.tasks_running_keyed'::regclass) as running_before,
       pg_stat_get_xact_tuples_returned('conductor.tasks_ready'::regclass)
       + pg_stat_get_xact_tuples_returned('conductor.tasks_ready_by_queue'::regclass)
       + pg_stat_get_xact_tuples_returned('conductor.tasks_ready_keyed'::regclass)
       + pg_stat_get_xact_tuples_returned('conductor.tasks_ready_by_key'::regclass) as ready_before,
       conductor_tests.seq_scans('tasks') as seq_before \gset

select is((select count(*) from conductor.claim('w-probe', array['probe-q'], 5)), 5::bigint, 'The claim takes five keyed tasks.');
select cmp_ok(pg_stat_get_xact_tuples_returned('conductor.tasks_running_keyed'::regclass) - :running_before, '<', 100::bigint,
  'It read fewer than 100 entries of tasks_running_keyed (a probe per candidate key; none runs).');
select cmp_ok(pg_stat_get_xact_tuples_returned('conductor.tasks_ready'::regclass)
              + pg_stat_get_xact_tuples_returned('conductor.tasks_ready_by_queue'::regclass)
              + pg_stat_get_xact_tuples_returned('conductor.tasks_ready_keyed'::regclass)
              + pg_stat_get_xact_tuples_returned('conductor.tasks_ready_by_key'::regclass) - :ready_before, '<', 200::bigint,
  'It read fewer than 200 entries of the ready indexes, of 3,000 ready tasks.');
select is(conductor_tests.seq_scans('tasks') - :seq_before, 0::bigint, 'It scanned conductor.tasks sequentially not once.');

select * from finish();
rollback;
