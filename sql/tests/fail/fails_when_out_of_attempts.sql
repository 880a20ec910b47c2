-- fail on the last allowed attempt (max_attempts 1 by default) finishes the task as failed.
begin;
select plan(3);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.enqueue('k', '{}', 'last-q') as t \gset
select run_at as run_at_before from conductor.tasks where id = :t \gset
select conductor_tests.claim_one('last-q') as a \gset
set local conductor.fake_now = '2030-01-01 00:00:05+00';

select is(conductor.fail(:a, 'boom'), 'failed'::conductor.task_status,
  'With retries not asked for, the first failure answers failed.');
select is(
  (select jsonb_build_object('status', status, 'error', error, 'finished_at', finished_at, 'lease_expires_at', lease_expires_at,
     'run_at', run_at, 'attempt', attempt, 'recoveries', recoveries) from conductor.tasks where id = :t),
  jsonb_build_object('status', 'failed', 'error', 'boom', 'finished_at', '2030-01-01 00:00:05+00'::timestamptz,
     'lease_expires_at', null, 'run_at', :'run_at_before'::timestamptz, 'attempt', 1, 'recoveries', 0),
  'The task is failed, finished now, with the error, its run_at unchanged.');
select is_empty($$select * from conductor.claim('w1', array['last-q'])$$, 'A failed task is not claimed again.');

select * from finish();
rollback;
