-- complete finishes the held task as succeeded, stores the result and closes the attempt.
begin;
select plan(4);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.enqueue('k', '{}', 'done-q') as t1 \gset
select conductor.enqueue('k', '{}', 'done-q') as t2 \gset
select conductor_tests.claim_one('done-q') as a1 \gset
select conductor_tests.claim_one('done-q') as a2 \gset

set local conductor.fake_now = '2030-01-01 00:00:30+00';
select lives_ok(format($$select conductor.complete(%s, '{"rows": 12}')$$, :a1),
  'complete by the holder succeeds.');
select is(
  (select jsonb_build_object('status', status, 'result', result, 'error', error, 'lease_expires_at', lease_expires_at,
     'finished_at', finished_at, 'attempt', attempt, 'attempt_id', attempt_id) from conductor.tasks where id = :t1),
  jsonb_build_object('status', 'succeeded', 'result', '{"rows": 12}'::jsonb, 'error', null, 'lease_expires_at', null,
     'finished_at', '2030-01-01 00:00:30+00'::timestamptz, 'attempt', 1, 'attempt_id', :a1),
  'The task is succeeded with the result, no lease, finished now; attempt_id names the last claim.');
select is((select (outcome, finished_at)::text from conductor.attempts where id = :a1),
  (select ('succeeded', '2030-01-01 00:00:30+00'::timestamptz)::text),
  'The attempt is closed as succeeded at the same time.');

select conductor.complete(:a2) as done \gset
select is((select (status, result)::text from conductor.tasks where id = :t2), '(succeeded,)',
  'complete without a result stores NULL.');

select * from finish();
rollback;
