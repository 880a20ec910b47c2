-- Cancelling a running task closes its attempt as cancelled; the worker learns it and cannot report.
begin;
select plan(5);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.enqueue('k', '{}', 'cancel-run') as t \gset
select conductor_tests.claim_one('cancel-run') as a \gset
set local conductor.fake_now = '2030-01-01 00:00:05+00';

select is(conductor.cancel(:t), 1, 'A running task is cancelled.');
select is((select (status, lease_expires_at, attempt_id)::text from conductor.tasks where id = :t), format('(cancelled,,%s)', :a),
  'The task is cancelled with no lease; attempt_id still names the last claim.');
select is((select (outcome, finished_at)::text from conductor.attempts where id = :a),
  (select ('cancelled', '2030-01-01 00:00:05+00'::timestamptz)::text),
  'Its attempt is closed as cancelled at the same time.');
select results_eq(format('select state from conductor.heartbeat(%L, array[%s]::bigint[])', 'w1', :a),
  $$values ('cancelled'::text)$$, 'The worker''s next heartbeat answers cancelled.');
select is_empty($$select * from conductor.claim('w2', array['cancel-run'])$$, 'A cancelled task is never claimed again.');

select * from finish();
rollback;
