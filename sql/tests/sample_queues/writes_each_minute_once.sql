-- sample_queues writes each minute once: a second call in the same minute writes nothing,
-- a call in the next minute writes that one, with what finished in it.
begin;
select plan(4);
\ir ../helpers.psql
delete from conductor.queue_samples;
delete from conductor.sample_minutes;
set local conductor.fake_now = '2031-03-03 10:00:30+00';
select conductor.enqueue('k', '{}', 'sq-once') as t \gset
update conductor.tasks set status = 'succeeded', finished_at = '2031-03-03 10:00:40+00' where id = :t;

select is(conductor.sample_queues(), 1440, 'The first call writes its minutes.');
set local conductor.fake_now = '2031-03-03 10:00:59+00';
select is(conductor.sample_queues(), 0, 'A second call in the same minute writes nothing.');
set local conductor.fake_now = '2031-03-03 10:01:00+00';
select is(conductor.sample_queues(), 1, 'A call in the next minute writes one minute, the one before it.');
select results_eq(
  $$select minute, finished, depth from conductor.queue_samples where queue = 'sq-once'$$,
  $$values ('2031-03-03 10:00:00+00'::timestamptz, 1, 0)$$,
  'The task that finished at 10:00:40 is counted once, in 10:00.');

select * from finish();
rollback;
