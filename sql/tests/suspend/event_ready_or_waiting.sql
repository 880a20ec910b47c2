-- A wait for an event is 'ready' with {"event", "payload"} checkpointed when the event was
-- already emitted; otherwise the task waits for it, as long as it takes or until a timeout.
begin;
select plan(6);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.emit_event('susp-ev-done', '{"ok": true}') as n \gset
select conductor.enqueue('k', '{}', 'susp-ev') as t \gset
select conductor_tests.claim_one('susp-ev') as a \gset
select results_eq(format($$select state, result from conductor.suspend(%s, 'approval', 'event', 'susp-ev-done')$$, :a),
  $$values ('ready'::text, '{"event": "susp-ev-done", "payload": {"ok": true}}'::jsonb)$$,
  'An event already emitted makes the wait ready with its name and payload.');
select is((select result from conductor.steps where task_id = :t and name = 'approval'),
  '{"event": "susp-ev-done", "payload": {"ok": true}}'::jsonb, 'The outcome is checkpointed under the wait step.');

select is((select state from conductor.suspend(:a, 'approval#2', 'event', 'susp-ev-pending')), 'waiting',
  'An event not yet emitted makes the task wait.');
select is((select (status, wait_for, wait_event, wait_until, wait_step)::text from conductor.tasks where id = :t),
  '(waiting,event,susp-ev-pending,,approval#2)',
  'Without a timeout the task waits for the event with no deadline.');

select conductor.enqueue('k', '{}', 'susp-ev') as t2 \gset
select conductor_tests.claim_one('susp-ev') as a2 \gset
select is((select state from conductor.suspend(:a2, 'w', 'event', 'susp-ev-pending', timeout => '1 hour')), 'waiting',
  'A wait with a timeout also waits.');
select is((select wait_until from conductor.tasks where id = :t2), '2030-01-01 01:00:00+00'::timestamptz,
  'Its deadline is now + timeout.');

select * from finish();
rollback;
