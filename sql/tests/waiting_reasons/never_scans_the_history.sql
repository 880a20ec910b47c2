-- waiting_reasons reads the queued tasks through the ready indexes, never by a sequential
-- scan of conductor.tasks (which would read the finished history too), for every queue and
-- for one; why_waiting reads a task by its id.
begin;
select plan(3);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';
select count(*) from conductor.enqueue_many(
  (select jsonb_agg(jsonb_build_object('kind', 'k', 'queue', 'wr-scan-' || (i % 3), 'priority', i % 2))
     from generate_series(1, 300) i)) \gset
update conductor.tasks set status = 'succeeded', finished_at = conductor.now()
 where queue = 'wr-scan-0';
analyze conductor.tasks;

select array(select id from conductor.tasks where queue = 'wr-scan-2' order by id limit 3)::text as ids \gset
select conductor_tests.seq_scans('tasks') as before \gset
select count(*) from conductor.waiting_reasons() \gset
select is(conductor_tests.seq_scans('tasks'), :before::bigint, 'waiting_reasons() scans no table sequentially.');
select count(*) from conductor.waiting_reasons('wr-scan-1') \gset
select is(conductor_tests.seq_scans('tasks'), :before::bigint, 'waiting_reasons(queue) neither.');
select count(*) from conductor.why_waiting(:'ids'::bigint[]) \gset
select is(conductor_tests.seq_scans('tasks'), :before::bigint, 'why_waiting neither: it reads tasks by id.');

select * from finish();
rollback;
