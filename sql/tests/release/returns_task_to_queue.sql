-- release hands a held task back at once: queued, due time and place unchanged, counting nothing.
begin;
select plan(5);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.enqueue('k', '{}', 'release-q', priority => 4, run_at => '2029-12-31 23:00:00+00') as t \gset
select conductor_tests.claim_one('release-q') as a1 \gset
set local conductor.fake_now = '2030-01-01 00:00:09+00';
select conductor.release(:a1) as r \gset

select is(
  (select jsonb_build_object('status', status, 'attempt', attempt, 'recoveries', recoveries, 'run_at', run_at,
     'priority', priority, 'lease_expires_at', lease_expires_at, 'finished_at', finished_at, 'error', error)
     from conductor.tasks where id = :t),
  jsonb_build_object('status', 'queued', 'attempt', 0, 'recoveries', 0, 'run_at', '2029-12-31 23:00:00+00'::timestamptz,
     'priority', 4, 'lease_expires_at', null, 'finished_at', null, 'error', null),
  'The task is queued again with attempt and recoveries back at 0, its run_at and priority unchanged.');
select is((select (outcome, finished_at)::text from conductor.attempts where id = :a1),
  (select ('released', '2030-01-01 00:00:09+00'::timestamptz)::text),
  'The attempt is closed as released.');

-- Releasing again and again never uses up the single attempt.
select conductor_tests.claim_one('release-q') as a2 \gset
select conductor.release(:a2) as r2 \gset
select conductor_tests.claim_one('release-q') as a3 \gset
select is((select attempt from conductor.tasks where id = :t), 1,
  'After two releases the third claim is still attempt 1.');
select is(conductor.fail(:a3, 'boom'), 'failed'::conductor.task_status,
  'With max_attempts 1, a failure after releases still fails: releases did not count.');
select is((select count(*) from conductor.attempts where task_id = :t and outcome = 'released'), 2::bigint,
  'Each release left its attempt row.');

select * from finish();
rollback;
