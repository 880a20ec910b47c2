-- fail(retry_at => ...) makes the retry due exactly then; a time in the past means now.
begin;
select plan(4);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.enqueue('k', '{}', 'retry-at-q', max_attempts => 5) as t \gset
select conductor_tests.claim_one('retry-at-q') as a1 \gset
select is(conductor.fail(:a1, 'rate limited', retry_at => '2030-01-01 02:00:00+00'), 'queued'::conductor.task_status,
  'A failure with retry_at answers queued.');
select is((select run_at from conductor.tasks where id = :t), '2030-01-01 02:00:00+00'::timestamptz,
  'The retry is due exactly at retry_at, even past the backoff cap.');

set local conductor.fake_now = '2030-01-01 02:00:00+00';
select conductor_tests.claim_one('retry-at-q') as a2 \gset
set local conductor.fake_now = '2030-01-01 02:00:05+00';
select is(conductor.fail(:a2, 'again', retry_at => '2029-01-01 00:00:00+00'), 'queued'::conductor.task_status,
  'A retry_at in the past is accepted.');
select is((select run_at from conductor.tasks where id = :t), '2030-01-01 02:00:05+00'::timestamptz,
  'A retry_at in the past makes the task due now, not in the past.');

select * from finish();
rollback;
