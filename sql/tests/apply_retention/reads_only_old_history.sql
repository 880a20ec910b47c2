-- apply_retention reads finished history through tasks_finished, up to the newest cutoff
-- only: with 20,000 recently finished tasks (and statistics of an empty table) it scans
-- conductor.tasks sequentially never and fetches a handful of heap rows, not the history.
begin;
select plan(3);
\ir ../helpers.psql
set local conductor.fake_now = '2090-01-01 00:00:00+00';

analyze conductor.tasks;
select count(*) from conductor.apply_retention() \gset

insert into conductor.tasks (queue, kind, run_at, status, root_id, enqueued_at, finished_at)
select 'ar-big', 'k', '2089-12-31 00:00:00+00', 'succeeded', nextval('conductor.tasks_id_seq'),
       '2089-12-31 00:00:00+00', '2089-12-31 00:00:00+00'::timestamptz + i * interval '1 second'
  from generate_series(1, 20000) i;
update conductor.tasks set root_id = id where queue = 'ar-big';
-- one old run, due
insert into conductor.tasks (queue, kind, run_at, status, root_id, enqueued_at, finished_at)
values ('ar-big-old', 'k', '2080-01-01 00:00:00+00', 'succeeded', nextval('conductor.tasks_id_seq'),
        '2080-01-01 00:00:00+00', '2080-01-01 00:00:00+00');
update conductor.tasks set root_id = id where queue = 'ar-big-old';

select conductor_tests.seq_scans('tasks') as scans_before,
       (select idx_tup_fetch from pg_stat_xact_user_tables where relid = 'conductor.tasks'::regclass) as fetched_before \gset
select results_eq($$select what, deleted from conductor.apply_retention()$$,
  $$values ('succeeded_runs', 1::bigint), ('failed_runs', 0::bigint), ('events', 0::bigint), ('exclusive_locks', 0::bigint)$$,
  'The one old run goes.');
select conductor_tests.seq_scans('tasks') - :scans_before as new_scans,
       (select idx_tup_fetch from pg_stat_xact_user_tables where relid = 'conductor.tasks'::regclass)
       - :fetched_before as fetched \gset
select is(:new_scans::bigint, 0::bigint, 'No sequential scan of conductor.tasks.');
select cmp_ok(:fetched::bigint, '<', 100::bigint, 'A handful of heap rows fetched, not the 20,000 recent tasks.');

select * from finish();
rollback;
