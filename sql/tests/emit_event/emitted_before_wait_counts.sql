-- An event emitted before anyone waits still counts: a later suspend on it is 'ready' at once,
-- the task keeps running, and the outcome is checkpointed.
begin;
select plan(3);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select is(conductor.emit_event('emit-early', '{"approved": true}'), 0, 'The early emit wakes nobody.');
select conductor.enqueue('k', '{}', 'emit-early') as t \gset
select conductor_tests.claim_one('emit-early') as a \gset
select results_eq(format($$select state, result from conductor.suspend(%s, 'approval', 'event', 'emit-early', timeout => '1 hour')$$, :a),
  $$values ('ready'::text, '{"event": "emit-early", "payload": {"approved": true}}'::jsonb)$$,
  'A later wait is ready with the early event.');
select is((select (t.status, s.result)::text from conductor.tasks t join conductor.steps s on s.task_id = t.id and s.name = 'approval'
            where t.id = :t),
  ('running', '{"event": "emit-early", "payload": {"approved": true}}'::jsonb)::text,
  'The task keeps running and the outcome is checkpointed.');

select * from finish();
rollback;
