-- fail with attempts left queues the task again, due after the backoff:
-- 30 s * 2^(attempt-1), at most 1 h, less a deterministic jitter of up to 20 %.
begin;
select plan(9);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';

-- The expected delay, written out from the contract (the formula of conductor._backoff).
create function pg_temp.expected_delay(task_id bigint, n integer) returns interval language sql as $$
  select least(interval '1 hour', interval '30 seconds' * power(2, n - 1))
         * (1 - 0.2 * (hashint8(task_id * 1000 + n)::bigint + 2147483648) / 4294967296.0)
$$;

select conductor.enqueue('flaky', '{}', 'retry-q', max_attempts => 3) as t \gset
select conductor_tests.claim_one('retry-q') as a1 \gset

set local conductor.fake_now = '2030-01-01 00:00:10+00';
select is(conductor.fail(:a1, 'timeout'), 'queued'::conductor.task_status,
  'The first failure of three allowed attempts answers queued.');
select is((select run_at from conductor.tasks where id = :t),
  '2030-01-01 00:00:10+00'::timestamptz + pg_temp.expected_delay(:t, 1),
  'It is due exactly at the failure time plus the first backoff.');
select ok((select run_at between '2030-01-01 00:00:34+00' and '2030-01-01 00:00:40+00' from conductor.tasks where id = :t),
  'The first backoff is between 24 and 30 seconds (30 s less at most 20 %).');
select is(
  (select jsonb_build_object('status', status, 'attempt', attempt, 'recoveries', recoveries, 'error', error,
     'lease_expires_at', lease_expires_at, 'finished_at', finished_at) from conductor.tasks where id = :t),
  jsonb_build_object('status', 'queued', 'attempt', 1, 'recoveries', 0, 'error', 'timeout',
     'lease_expires_at', null, 'finished_at', null),
  'The task is queued, the failed attempt counted, recoveries untouched, the error kept as the last one.');

select is_empty($$select * from conductor.claim('w1', array['retry-q'])$$,
  'It is not claimed before its retry is due.');
select run_at as due1 from conductor.tasks where id = :t \gset
select set_config('conductor.fake_now', :'due1', true) as moved \gset
select conductor_tests.claim_one('retry-q') as a2 \gset

set local conductor.fake_now = '2030-01-01 00:05:00+00';
select is(conductor.fail(:a2, 'timeout again'), 'queued'::conductor.task_status,
  'The second failure of three answers queued.');
select is((select run_at from conductor.tasks where id = :t),
  '2030-01-01 00:05:00+00'::timestamptz + pg_temp.expected_delay(:t, 2),
  'The second retry is due after the doubled backoff (60 s less jitter).');

select run_at as due2 from conductor.tasks where id = :t \gset
select set_config('conductor.fake_now', :'due2', true) as moved \gset
select conductor_tests.claim_one('retry-q') as a3 \gset
select is(conductor.fail(:a3, 'third'), 'failed'::conductor.task_status,
  'The third failure of three answers failed.');
select is((select (attempt, recoveries)::text from conductor.tasks where id = :t), '(3,0)',
  'Three attempts counted, no recovery.');

select * from finish();
rollback;
