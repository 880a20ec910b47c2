-- stats() counts a queue's ready, scheduled, running and waiting tasks and measures the
-- backlog age from the earliest due ready task, on the fake clock.
begin;
select plan(9);
\ir ../helpers.psql

set local conductor.fake_now = '2030-01-01 12:00:00+00';
select conductor.enqueue('k', '{}', 'st-a') as r1 \gset
set local conductor.fake_now = '2030-01-01 12:02:00+00';
select conductor.enqueue('k', '{}', 'st-a') as r2 \gset
select conductor.enqueue('k', '{}', 'st-a') as r3 \gset
select conductor.enqueue('k', '{}', 'st-a', run_at => '2030-01-01 13:00:00+00') as later \gset
select conductor.enqueue('k', '{}', 'st-b') as b1 \gset
select conductor_tests.claim_one('st-b') as ab \gset
-- a suspended task (written directly until suspend() exists in every deployment)
update conductor.tasks set status = 'waiting', wait_for = 'sleep' where id = :r3;
set local conductor.fake_now = '2030-01-01 12:05:00+00';

select is((select s.ready from conductor.stats() s where s.queue = 'st-a'), 2::bigint,
  'Queued tasks due now are counted as ready.');
select is((select s.scheduled from conductor.stats() s where s.queue = 'st-a'), 1::bigint,
  'A queued task due later is counted as scheduled, not ready.');
select is((select s.waiting from conductor.stats() s where s.queue = 'st-a'), 1::bigint,
  'A waiting task is counted as waiting.');
select is((select s.oldest_ready_age from conductor.stats() s where s.queue = 'st-a'), interval '5 minutes',
  'The backlog age is now minus the earliest due time of a ready task.');
select is((select s.running from conductor.stats() s where s.queue = 'st-b'), 1::bigint,
  'A claimed task is counted as running in its queue.');
select is((select s.ready from conductor.stats() s where s.queue = 'st-b'), 0::bigint,
  'A queue with nothing ready reports 0 ready.');
select is((select s.oldest_ready_age from conductor.stats() s where s.queue = 'st-b'), null::interval,
  'A queue with nothing ready has no backlog age.');
select is((select s.failure_rate from conductor.stats() s where s.queue = 'st-a'), null::double precision,
  'A queue that finished nothing has no failure rate.');
select results_eq(
  $$select s.queue from conductor.stats() s where s.queue like 'st-%'$$,
  $$values ('st-a'), ('st-b')$$,
  'One row per queue, ordered by queue name.');

select * from finish();
rollback;
