-- queue_series answers a chart's points per queue and step, read as conductor_client:
-- finished and failed summed over the step's sampled minutes, depth and age the largest
-- read live, NULL where nothing was sampled, 0 for a sampled minute without a row.
begin;
select plan(6);
\ir ../helpers.psql
delete from conductor.queue_samples;
delete from conductor.sample_minutes;
set local conductor.fake_now = '2031-03-03 10:00:30+00';
select count(conductor.enqueue('k', '{}', 'qs-a', run_at => '2031-03-03 09:59:00+00')) from generate_series(1, 2) \gset
-- 09:59 live: qs-a depth 2, age 90 s
select conductor.sample_queues() as s1 \gset
select conductor.enqueue('k', '{}', 'qs-b') as b1 \gset
select conductor.enqueue('k', '{}', 'qs-b') as b2 \gset
update conductor.tasks set status = 'succeeded', finished_at = '2031-03-03 10:01:10+00' where id = :b1;
update conductor.tasks set status = 'dead', finished_at = '2031-03-03 10:02:10+00' where id = :b2;
set local conductor.fake_now = '2031-03-03 10:03:05+00';
-- 10:00 and 10:01 backfilled, 10:02 live
select conductor.sample_queues() as s2 \gset

create role t_client;
grant conductor_client to t_client;
set local role t_client;
select results_eq(
  $$select queue, at, finished, failed, depth, oldest_age, minutes
      from conductor.queue_series(since => '2031-03-03 09:59:00+00', until => '2031-03-03 10:04:00+00')$$,
  $$values ('qs-a'::text, '2031-03-03 09:59:00+00'::timestamptz, 0::bigint, 0::bigint, 2::bigint, interval '90 seconds', 1),
           ('qs-a', '2031-03-03 10:00:00+00', 0, 0, null, null, 1),
           ('qs-a', '2031-03-03 10:01:00+00', 0, 0, null, null, 1),
           ('qs-a', '2031-03-03 10:02:00+00', 0, 0, 2, interval '4 minutes 5 seconds', 1),
           ('qs-a', '2031-03-03 10:03:00+00', null, null, null, null, 0),
           ('qs-b', '2031-03-03 09:59:00+00', 0, 0, 0, interval '0', 1),
           ('qs-b', '2031-03-03 10:00:00+00', 0, 0, null, null, 1),
           ('qs-b', '2031-03-03 10:01:00+00', 1, 0, null, null, 1),
           ('qs-b', '2031-03-03 10:02:00+00', 1, 1, 0, interval '0', 1),
           ('qs-b', '2031-03-03 10:03:00+00', null, null, null, null, 0)$$,
  'Per minute: the samples as written, NULL depth where backfilled, NULL everything where unsampled.');
select results_eq(
  $$select at, finished, failed, depth, oldest_age, minutes
      from conductor.queue_series(since => '2031-03-03 09:58:00+00', until => '2031-03-03 10:05:00+00',
                                  step => interval '5 minutes', queues => array['qs-b'])$$,
  $$values ('2031-03-03 09:55:00+00'::timestamptz, 0::bigint, 0::bigint, 0::bigint, interval '0', 5),
           ('2031-03-03 10:00:00+00', 2, 1, 0, interval '0', 3)$$,
  'By 5 minutes from a rounded-down since: sums of the counts, the largest depth, the minutes sampled.');
select is((select count(*) from conductor.queue_series(since => '2031-03-03 09:00:00+00', until => '2031-03-03 10:00:00+00',
                                                       queues => array['qs-none'])), 60::bigint,
  'A queue named without samples still answers its points (60 for an hour by minute).');
select is((select sum(finished) from conductor.queue_series(since => '2031-03-03 09:00:00+00', until => '2031-03-03 10:00:00+00',
                                                           queues => array['qs-none'])), 0::numeric,
  'Its sampled minutes count 0.');
select is((select count(distinct queue) from conductor.queue_series(since => '2031-03-03 09:59:00+00',
                                                                    until => '2031-03-03 10:03:00+00')), 2::bigint,
  'Without a queue, every queue with a sample in the range.');
select is((select count(*) from conductor.queue_series(since => conductor.now() - interval '1 day', step => interval '10 minutes')),
  2 * 145::bigint, 'The last day by 10 minutes: 145 points a queue (since rounded down).');
reset role;

select * from finish();
rollback;
