-- reap wakes a durable sleep once its wake time has come: queued, due now, the wake time kept
-- as the step's checkpoint; not a moment before.
begin;
select plan(4);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.enqueue('k', '{}', 'reap-sleep') as t \gset
select conductor_tests.claim_one('reap-sleep') as a \gset
select state from conductor.suspend(:a, 'nap', 'sleep', duration => '5 minutes') \gset

set local conductor.fake_now = '2030-01-01 00:04:59.999999+00';
select conductor.reap() as r1 \gset
select is((select status::text from conductor.tasks where id = :t), 'waiting', 'Before its wake time the sleep goes on.');

set local conductor.fake_now = '2030-01-01 00:05:00+00';
select is(conductor.reap(), 1, 'At its wake time reap wakes it and counts it.');
select is((select (status, run_at, wait_for, wait_until, wait_step)::text from conductor.tasks where id = :t),
  ('queued', '2030-01-01 00:05:00+00'::timestamptz, null::text, null::timestamptz, null::text)::text,
  'The task is queued, due now, its wait cleared.');
select is((select (result->>'until')::timestamptz from conductor.steps where task_id = :t and name = 'nap'),
  '2030-01-01 00:05:00+00'::timestamptz, 'The sleep''s checkpoint still holds its wake time.');

select * from finish();
rollback;
