-- Within a priority, keyed tasks are taken in turns across their keys: each key's first
-- ready task, then each key's second, ... (a key's running tasks count as turns it had), so
-- a key with a long backlog does not starve one enqueued after it. A higher priority still comes first. The claim reads each key from
-- its head: a backlog of 2,000 tasks of one key is not read.
begin;
select plan(4);
\ir ../helpers.psql

select count(*) from (select conductor.enqueue('k', jsonb_build_object('n', n), 'turns-q',
                                               concurrency_key => 'big', concurrency_limit => 10000)
                        from generate_series(1, 2000) n) x;
select array_agg(conductor.enqueue('k', jsonb_build_object('n', n), 'turns-q',
                                   concurrency_key => 'small', concurrency_limit => 10000) order by n) as small
  from generate_series(1, 3) n \gset
select min(id) as big1 from conductor.tasks where concurrency_key = 'big' \gset
analyze conductor.tasks;

select pg_stat_get_xact_tuples_returned('conductor.tasks_ready_by_key'::regclass)
       + pg_stat_get_xact_tuples_returned('conductor.tasks_ready_keyed'::regclass)
       + pg_stat_get_xact_tuples_returned('conductor.tasks_ready'::regclass)
       + pg_stat_get_xact_tuples_returned('conductor.tasks_ready_by_queue'::regclass) as read_before \gset
create temp table got as select * from conductor.claim('w1', array['turns-q'], 6);
select cmp_ok(pg_stat_get_xact_tuples_returned('conductor.tasks_ready_by_key'::regclass)
              + pg_stat_get_xact_tuples_returned('conductor.tasks_ready_keyed'::regclass)
              + pg_stat_get_xact_tuples_returned('conductor.tasks_ready'::regclass)
              + pg_stat_get_xact_tuples_returned('conductor.tasks_ready_by_queue'::regclass) - :read_before,
  '<', 100::bigint, 'The claim read fewer than 100 entries of the ready indexes, with 2,003 tasks ready.');
select is((select count(*)::int from got g join conductor.tasks t on t.id = g.task_id where t.concurrency_key = 'small'),
  3, 'A claim of six takes all three tasks of the small key, enqueued after 2,000 of the big key''s.');
select is((select count(*)::int from got g join conductor.tasks t on t.id = g.task_id where t.concurrency_key = 'big'),
  3, 'And the big key''s first three: one each, turn by turn.');

select conductor.enqueue('k', '{}', 'turns-q', priority => 5, concurrency_key => 'big', concurrency_limit => 10000)
  as urgent \gset
select conductor.enqueue('k', '{}', 'turns-q', concurrency_key => 'late', concurrency_limit => 10000) as late \gset
select results_eq($$select task_id from conductor.claim('w3', array['turns-q'], 2)$$,
  format('values (%s::bigint), (%s::bigint)', :urgent, :late),
  'A higher priority comes first; then a key with none running comes before the big key, which has three running.');

select * from finish();
rollback;
