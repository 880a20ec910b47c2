-- fail stores the error and traceback in the attempt row; every attempt keeps its own.
begin;
select plan(3);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.enqueue('k', '{}', 'tb-q', max_attempts => 3) as t \gset
select conductor_tests.claim_one('tb-q') as a1 \gset
set local conductor.fake_now = '2030-01-01 00:00:07+00';
select conductor.fail(:a1, 'ValueError: bad', traceback => E'Traceback (most recent call last):\n  File "x.py", line 1') as s1 \gset

select is(conductor_tests.attempt(:a1) - array['id', 'task_id', 'claimed_at', 'host', 'pid'],
  jsonb_build_object('attempt', 1, 'worker_id', 'w1', 'outcome', 'failed',
    'finished_at', '2030-01-01 00:00:07+00'::timestamptz, 'error', 'ValueError: bad',
    'traceback', E'Traceback (most recent call last):\n  File "x.py", line 1', 'timed_out', false),
  'The attempt is closed as failed at the failure time, with the error and the full traceback, not timed out.');

set local conductor.fake_now = '2030-01-01 01:00:00+00';
select conductor_tests.claim_one('tb-q') as a2 \gset
select conductor.fail(:a2, '') as s2 \gset
select is((select (error, traceback)::text from conductor.attempts where id = :a2), '("error not given",)',
  'An empty error is stored as ''error not given''; no traceback is NULL.');
select is((select error from conductor.attempts where id = :a1), 'ValueError: bad',
  'The earlier attempt keeps its own error.');

select * from finish();
rollback;
