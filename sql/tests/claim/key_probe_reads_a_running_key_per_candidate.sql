-- The key probe checks each candidate's key against the running tasks with one probe of
-- tasks_running_keyed (its plan is made once per connection): with 300 running keyed tasks,
-- a claim of one keyed task reads a handful of that index's entries, not the 300 for every
-- candidate that v0.2.0's anti-join read (a claim of 50 keyed tasks took 2 s with 100,000
-- ready and 100 running: bench/keys.sh). Counted with this transaction's statistics of the index.
begin;
select plan(2);
\ir ../helpers.psql

select count(*) from (select conductor.enqueue('k', '{}', 'probe-q', concurrency_key => 'run-' || i) from generate_series(1, 300) i) x;
select count(*) from conductor.claim('w-run', array['probe-q'], 300);
select count(*) from (select conductor.enqueue('k', '{}', 'probe-q', concurrency_key => 'ready-' || i) from generate_series(1, 100) i) x;
select pg_stat_get_xact_tuples_returned('conductor.tasks_running_keyed'::regclass) as before \gset

select is((select count(*) from conductor.claim('w-probe', array['probe-q'], 1)), 1::bigint, 'The claim takes one keyed task.');
select cmp_ok(pg_stat_get_xact_tuples_returned('conductor.tasks_running_keyed'::regclass) - :before, '<', 100::bigint,
  'It read fewer than 100 entries of tasks_running_keyed (one probe per candidate key, none of which runs).');

select * from finish();
rollback;
