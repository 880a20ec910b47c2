-- A durable sleep checkpoints its wake time on the first call: a sleep of 0 (or a wake time
-- already past) is ready; otherwise the task waits until that instant, and a replay of the
-- same step sleeps until the same instant, not for the duration again.
begin;
select plan(7);
\ir ../helpers.psql
set local timezone = 'UTC';  -- the checkpoint holds the wake time as JSON text
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.enqueue('k', '{}', 'susp-sleep') as t \gset
select conductor_tests.claim_one('susp-sleep') as a \gset
select results_eq(format($$select state, result from conductor.suspend(%s, 'nap', 'sleep', duration => '0')$$, :a),
  $$values ('ready'::text, '{"until": "2030-01-01T00:00:00+00:00"}'::jsonb)$$,
  'A sleep of 0 is ready at once with its wake time.');
select is((select result from conductor.steps where task_id = :t and name = 'nap'),
  '{"until": "2030-01-01T00:00:00+00:00"}'::jsonb, 'Its wake time is checkpointed.');

select results_eq(format($$select state, result from conductor.suspend(%s, 'long', 'sleep', duration => '10 minutes')$$, :a),
  $$values ('waiting'::text, null::jsonb)$$,
  'A sleep of 10 minutes waits.');
select is((select (status, wait_for, wait_until, wait_step)::text from conductor.tasks where id = :t),
  ('waiting', 'sleep', '2030-01-01 00:10:00+00'::timestamptz, 'long')::text,
  'The task sleeps until now + 10 minutes.');
select is((select result from conductor.steps where task_id = :t and name = 'long'),
  '{"until": "2030-01-01T00:10:00+00:00"}'::jsonb, 'The wake time is checkpointed on the first call.');

-- a replay before the wake time (cancelled and retried by hand 3 minutes later) sleeps until the same instant
set local conductor.fake_now = '2030-01-01 00:03:00+00';
select conductor.cancel(:t) as c \gset
select conductor.retry(:t) as r \gset
select conductor_tests.claim_one('susp-sleep') as a2 \gset
select conductor.suspend(:a2, 'long', 'sleep', duration => '10 minutes') as s \gset
select is((select wait_until from conductor.tasks where id = :t), '2030-01-01 00:10:00+00'::timestamptz,
  'A replay of the sleep waits until the checkpointed wake time, not 10 minutes from now.');

-- a replay after the wake time is ready with the same checkpoint
set local conductor.fake_now = '2030-01-01 00:10:00+00';
select conductor.reap() as woken \gset
select conductor_tests.claim_one('susp-sleep') as a3 \gset
select results_eq(format($$select state, result from conductor.suspend(%s, 'long', 'sleep', duration => '10 minutes')$$, :a3),
  $$values ('ready'::text, '{"until": "2030-01-01T00:10:00+00:00"}'::jsonb)$$,
  'Once the wake time has passed, the replay is ready with the checkpointed wake time.');

select * from finish();
rollback;
