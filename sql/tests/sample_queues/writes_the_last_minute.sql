-- sample_queues writes the last whole minute: per queue, the tasks that finished in it
-- (any final status) and of them the failed and dead ones, and the ready depth and backlog
-- age read at the call; a first sample backfills the day before it (finished counts only).
begin;
select plan(8);
\ir ../helpers.psql
delete from conductor.queue_samples;
delete from conductor.sample_minutes;
set local conductor.fake_now = '2031-03-03 10:00:30+00';

-- sq-a: 4 ready (the earliest due 09:58:00), 1 due later
select count(conductor.enqueue('k', '{}', 'sq-a', run_at => t))
  from unnest(array['2031-03-03 09:58:00+00', '2031-03-03 09:59:00+00', '2031-03-03 10:00:00+00',
                    '2031-03-03 10:00:30+00', '2031-03-03 11:00:00+00']::timestamptz[]) t \gset
-- sq-b: finished in 09:59 (2 succeeded, 1 failed, 1 cancelled), in 10:00 (1), in 09:58 (1 dead)
select conductor.enqueue('k', '{}', 'sq-b') as b1 \gset
select conductor.enqueue('k', '{}', 'sq-b') as b2 \gset
select conductor.enqueue('k', '{}', 'sq-b') as b3 \gset
select conductor.enqueue('k', '{}', 'sq-b') as b4 \gset
select conductor.enqueue('k', '{}', 'sq-b') as b5 \gset
select conductor.enqueue('k', '{}', 'sq-b') as b6 \gset
update conductor.tasks t set status = v.status::conductor.task_status, finished_at = v.at
  from (values (:b1, 'succeeded', '2031-03-03 09:59:00+00'::timestamptz),
               (:b2, 'succeeded', '2031-03-03 09:59:59.999+00'),
               (:b3, 'failed', '2031-03-03 09:59:30+00'),
               (:b4, 'cancelled', '2031-03-03 09:59:31+00'),
               (:b5, 'succeeded', '2031-03-03 10:00:00+00'),
               (:b6, 'dead', '2031-03-03 09:58:20+00')) v (id, status, at)
 where t.id = v.id;

select is(conductor.sample_queues(), 1440, 'The first sample writes the last whole minute and the day before it.');
select results_eq(
  $$select minute, sampled_at from conductor.sample_minutes where sampled_at is not null$$,
  $$values ('2031-03-03 09:59:00+00'::timestamptz, '2031-03-03 10:00:30+00'::timestamptz)$$,
  'Only the last whole minute (09:59) is sampled live, at the time of the call.');
select results_eq(
  $$select min(minute), max(minute) from conductor.sample_minutes$$,
  $$values ('2031-03-02 10:00:00+00'::timestamptz, '2031-03-03 09:59:00+00'::timestamptz)$$,
  'The backfill reaches a day back, no further.');
select results_eq(
  $$select finished, failed, depth, oldest_age from conductor.queue_samples
     where queue = 'sq-a' and minute = '2031-03-03 09:59:00+00'$$,
  $$values (0, 0, 4, interval '2 minutes 30 seconds')$$,
  'sq-a: 4 ready tasks (the one due later is not), the earliest due 2 min 30 s before the call.');
select results_eq(
  $$select finished, failed, depth, oldest_age from conductor.queue_samples
     where queue = 'sq-b' and minute = '2031-03-03 09:59:00+00'$$,
  $$values (4, 1, 0, interval '0')$$,
  'sq-b in 09:59: 4 finished (2 succeeded, 1 failed, 1 cancelled), 1 failed, nothing ready.');
select results_eq(
  $$select finished, failed, depth, oldest_age from conductor.queue_samples
     where queue = 'sq-b' and minute = '2031-03-03 09:58:00+00'$$,
  $$values (1, 1, null::integer, null::interval)$$,
  'sq-b in 09:58, backfilled: the dead task counted as finished and failed; depth and age unknown (NULL).');
select is_empty(
  $$select * from conductor.queue_samples where minute >= '2031-03-03 10:00:00+00'$$,
  'The minute under way (10:00) is not written: the task finished at 10:00:00 waits for the next sample.');
select is((select count(*) from conductor.queue_samples where queue like 'sq-%'), 3::bigint,
  'A minute in which a queue finished nothing and had nothing ready has no row for it.');

select * from finish();
rollback;
