-- A wait for unfinished children parks the task: waiting, the attempt 'suspended' and not
-- counted, the lease cleared, the wait columns set, wait_until now + 4 h by default.
begin;
select plan(8);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.enqueue('k', '{}', 'susp-wait', max_attempts => 3) as t \gset
select conductor_tests.claim_one('susp-wait') as a \gset
select conductor.spawn(:a, 'c1', 'kid', '{}', 'susp-wait-kids') as c1 \gset
select conductor.spawn(:a, 'c2', 'kid', '{}', 'susp-wait-kids') as c2 \gset
select conductor.complete(conductor_tests.claim_one('susp-wait-kids'), '1') as x \gset

set local conductor.fake_now = '2030-01-01 00:00:05+00';
select results_eq(format($$select state, result from conductor.suspend(%s, 'join', 'children_all')$$, :a),
  $$values ('waiting'::text, null::jsonb)$$,
  'children_all with an unfinished child returns waiting and no result.');
select is(
  (select jsonb_build_object('status', status, 'attempt', attempt, 'lease_expires_at', lease_expires_at,
     'wait_for', wait_for, 'wait_event', wait_event, 'wait_until', wait_until, 'wait_step', wait_step,
     'finished_at', finished_at) from conductor.tasks where id = :t),
  jsonb_build_object('status', 'waiting', 'attempt', 0, 'lease_expires_at', null,
     'wait_for', 'children_all', 'wait_event', null, 'wait_until', '2030-01-01 04:00:05+00'::timestamptz,
     'wait_step', 'join', 'finished_at', null),
  'The task waits for children_all until now + 4 h, its attempt given back and its lease cleared.');
select is((select (outcome, finished_at)::text from conductor.attempts where id = :a),
  ('suspended', '2030-01-01 00:00:05+00'::timestamptz)::text,
  'The attempt ends suspended.');
select is_empty(format($$select * from conductor.steps where task_id = %s and name = 'join'$$, :t),
  'Nothing is checkpointed for the wait yet.');
select throws_ok(format($$select conductor.save_step(%s, 'after', '1')$$, :a), 'QC201', NULL,
  'The suspended attempt no longer holds the task.');
select is_empty($$select * from conductor.claim('w2', array['susp-wait'])$$,
  'A waiting task is not claimed.');

-- children_any with a timeout of its own
select conductor.enqueue('k', '{}', 'susp-wait-any') as t2 \gset
select conductor_tests.claim_one('susp-wait-any') as a2 \gset
select conductor.spawn(:a2, 'c1', 'kid', '{}', 'susp-wait-any-kids') as e1 \gset
select is((select state from conductor.suspend(:a2, 'any', 'children_any', timeout => '10 minutes')), 'waiting',
  'children_any with no child finished returns waiting.');
select is((select (wait_for, wait_until)::text from conductor.tasks where id = :t2),
  ('children_any', '2030-01-01 00:10:05+00'::timestamptz)::text,
  'A given timeout sets wait_until to now + timeout.');

select * from finish();
rollback;
