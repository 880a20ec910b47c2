-- next_due keeps one plan per connection (force_generic_plan), and that plan must stay on
-- tasks_ready_by_queue probes once the backlog has grown: planned on empty analysed tables,
-- then 20,000 tasks written without ANALYZE (most due now, 400 later, two queues, three
-- priorities), next_due must not scan conductor.tasks sequentially and must fetch a handful
-- of rows, not the backlog (pg_stat_xact_user_tables counts this transaction's). Its
-- answer is checked too.
begin;
select plan(5);
\ir ../helpers.psql
set local conductor.fake_now = '2090-01-01 00:00:00+00';

analyze conductor.tasks;
-- the plans are made on empty tables, every path: given queues, every queue, kinds
select conductor.next_due(array['nd-big']) as x \gset
select conductor.next_due() as x \gset
select conductor.next_due(array['nd-big'], array['k']) as x \gset

select count(*) from conductor.enqueue_many(
  (select jsonb_agg(jsonb_build_object('kind', 'k', 'queue', case when i % 2 = 0 then 'nd-big' else 'nd-big-2' end,
                                       'priority', i % 3,
                                       'run_at', case when i % 100 in (0, 1) then '2090-01-01 01:00:00+00'::timestamptz
                                                                          + i * interval '1 second'
                                                      else '2089-12-31 00:00:00+00' end))
     from generate_series(1, 20000) i)) \gset

select conductor_tests.seq_scans('tasks') as scans_before,
       (select idx_tup_fetch from pg_stat_xact_user_tables where relid = 'conductor.tasks'::regclass) as fetched_before \gset

select conductor.next_due(array['nd-big']) as due_big \gset
select conductor.next_due() as due_all \gset
select conductor.next_due(array['nd-big', 'nd-big-2'], array['k']) as due_kinds \gset

select conductor_tests.seq_scans('tasks') - :scans_before as new_scans,
       (select idx_tup_fetch from pg_stat_xact_user_tables where relid = 'conductor.tasks'::regclass)
       - :fetched_before as fetched \gset

select is(:'due_big'::timestamptz, '2090-01-01 01:01:40+00'::timestamptz,
  'next_due of a queue answers its earliest future task (task 100 of nd-big).');
select is(:'due_all'::timestamptz, '2090-01-01 01:00:01+00'::timestamptz,
  'next_due of every queue answers the earliest of all (task 1, of nd-big-2).');
select is(:'due_kinds'::timestamptz, '2090-01-01 01:00:01+00'::timestamptz,
  'With kinds, the same.');
select is(:new_scans::bigint, 0::bigint, 'No sequential scan of conductor.tasks after it grew.');
select cmp_ok(:fetched::bigint, '<', 100::bigint,
  'A handful of heap rows fetched (a few per queue and priority), not the 20,000 tasks.');

select * from finish();
rollback;
