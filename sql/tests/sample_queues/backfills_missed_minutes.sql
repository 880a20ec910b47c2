-- A sampler that missed minutes (no maintenance process ran) writes every whole minute
-- since the last one written: their finished and failed counts from the finished tasks,
-- their depth and age NULL (nobody read them then); the last minute is sampled live.
begin;
select plan(5);
\ir ../helpers.psql
delete from conductor.queue_samples;
delete from conductor.sample_minutes;
set local conductor.fake_now = '2031-03-03 10:00:30+00';
select conductor.sample_queues() as first \gset

select conductor.enqueue('k', '{}', 'sq-gap') as t1 \gset
select conductor.enqueue('k', '{}', 'sq-gap') as t2 \gset
select conductor.enqueue('k', '{}', 'sq-gap', run_at => '2031-03-03 10:03:00+00') as t3 \gset
update conductor.tasks set status = 'succeeded', finished_at = '2031-03-03 10:02:15+00' where id = :t1;
update conductor.tasks set status = 'failed', finished_at = '2031-03-03 10:02:45+00' where id = :t2;

set local conductor.fake_now = '2031-03-03 10:05:10+00';
select is(conductor.sample_queues(), 5, 'Five minutes were missed (10:00 to 10:04): all five are written.');
select results_eq(
  $$select minute, sampled_at from conductor.sample_minutes where minute >= '2031-03-03 10:00:00+00' order by minute$$,
  $$values ('2031-03-03 10:00:00+00'::timestamptz, null::timestamptz), ('2031-03-03 10:01:00+00', null),
           ('2031-03-03 10:02:00+00', null), ('2031-03-03 10:03:00+00', null),
           ('2031-03-03 10:04:00+00', '2031-03-03 10:05:10+00')$$,
  'The missed minutes are marked backfilled (sampled_at NULL); the last one sampled at the call.');
select results_eq(
  $$select minute, finished, failed, depth, oldest_age from conductor.queue_samples where queue = 'sq-gap' order by minute$$,
  $$values ('2031-03-03 10:02:00+00'::timestamptz, 2, 1, null::integer, null::interval),
           ('2031-03-03 10:04:00+00', 0, 0, 1, interval '2 minutes 10 seconds')$$,
  'The backfilled minute has its counts and no depth; the live one its depth and age (due 10:03:00, read 10:05:10).');

-- a sampler down for over a day backfills one day
set local conductor.fake_now = '2031-03-05 00:00:00+00';
select is(conductor.sample_queues(), 1440, 'After two days down, one day of minutes is written, not two.');
select is((select min(minute) from conductor.sample_minutes where minute > '2031-03-03 10:04:00+00'),
  '2031-03-04 00:00:00+00'::timestamptz, 'The gap before that day stays unsampled.');

select * from finish();
rollback;
