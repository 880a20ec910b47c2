-- sample_queues reads the finished tasks of the minutes it writes through the index
-- tasks_finished and the ready ones through the ready indexes, never by a sequential scan
-- of conductor.tasks (which would read the whole history every minute).
begin;
select plan(2);
\ir ../helpers.psql
delete from conductor.queue_samples;
delete from conductor.sample_minutes;
set local conductor.fake_now = '2031-03-03 10:00:30+00';
select count(*) from conductor.enqueue_many(
  (select jsonb_agg(jsonb_build_object('kind', 'k', 'queue', 'sq-scan-' || (i % 3))) from generate_series(1, 3000) i)) \gset
update conductor.tasks set status = 'succeeded',
       finished_at = timestamptz '2031-03-03 10:00:00+00' - (id % 4000) * interval '1 minute'
 where queue in ('sq-scan-0', 'sq-scan-1');
analyze conductor.tasks;
select conductor.sample_queues() as first \gset

set local conductor.fake_now = '2031-03-03 10:01:30+00';
select conductor_tests.seq_scans('tasks') as before \gset
select is(conductor.sample_queues(), 1, 'The next minute is written.');
select is(conductor_tests.seq_scans('tasks'), :before::bigint, 'sample_queues scans conductor.tasks by no sequential scan.');

select * from finish();
rollback;
