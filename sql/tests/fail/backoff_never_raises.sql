-- conductor._backoff answers for any stored policy, never raising: v0.1.0 stored whatever
-- it was given (a factor NaN, a base of a million years), and a task's second failure then
-- raised "interval out of range". Values outside what enqueue and configure_kind now
-- accept are clamped to that range (factor 1-10, base and max 0-30 days).
begin;
select plan(8);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select ok(conductor._backoff(1, 1000000, null, 10, '30 days') between interval '24 days' and interval '30 days',
  'A millionth retry with factor 10 answers the 30-day maximum, less the jitter.');
select ok(conductor._backoff(1, 2, '1000000 years', 2, '1000000 years') <= interval '30 days',
  'A base and max of a million years are clamped to 30 days.');
select ok(conductor._backoff(1, 50, '10 seconds', 'NaN', null) between interval '8 seconds' and interval '10 seconds',
  'A factor NaN counts as 1: the base, less the jitter.');
select ok(conductor._backoff(1, 2000000000, '1 second', 'Infinity', null) <= interval '1 hour',
  'An infinite factor counts as 10, capped by the default maximum.');
select ok(conductor._backoff(9223372036854775807, 2147483647, null, null, null) <= interval '1 hour',
  'The largest task id and retry number answer too.');
select is(conductor._backoff(1, 3, '-5 seconds', 2, null), interval '0',
  'A negative base counts as zero.');

-- a task whose own policy v0.1.0 stored unchecked
select conductor.enqueue('k', '{}', 'wild-q', max_attempts => 3) as t \gset
set local role conductor_owner;
update conductor.tasks set backoff_factor = 'NaN', backoff_base = '1000000 years', backoff_max = null where id = :t;
reset role;
select conductor_tests.claim_one('wild-q') as a1 \gset
select is(conductor.fail(:a1, 'one'), 'queued'::conductor.task_status, 'The first failure queues the task.');
update conductor.tasks set run_at = '2030-01-01 00:00:00+00' where id = :t;
select conductor_tests.claim_one('wild-q') as a2 \gset
select is(conductor.fail(:a2, 'two'), 'queued'::conductor.task_status,
  'The second failure queues it again instead of raising "interval out of range".');

select * from finish();
rollback;
