-- reap ends an event wait past its timeout: the task is queued with {"event", "timed_out": true}
-- checkpointed, so the replay sees the same outcome even if the event arrives later; an event
-- wait without a timeout is never ended by reap.
begin;
select plan(5);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.enqueue('k', '{}', 'reap-ev') as t \gset
select conductor.enqueue('k', '{}', 'reap-ev') as forever \gset
select conductor_tests.claim_one('reap-ev') as a \gset
select conductor_tests.claim_one('reap-ev') as af \gset
select state from conductor.suspend(:a, 'approval', 'event', 'reap-ev-approved', timeout => '1 hour') \gset
select state from conductor.suspend(:af, 'approval', 'event', 'reap-ev-approved') \gset

set local conductor.fake_now = '2030-01-01 01:00:00+00';
select conductor.reap() as r \gset
select is((select status::text from conductor.tasks where id = :t), 'queued', 'The timed-out wait is queued again.');
select is((select result from conductor.steps where task_id = :t and name = 'approval'),
  '{"event": "reap-ev-approved", "timed_out": true}'::jsonb, 'Its outcome {"event", "timed_out": true} is checkpointed.');

set local conductor.fake_now = '2030-02-01 00:00:00+00';
select conductor.reap() as r2 \gset
select is((select status::text from conductor.tasks where id = :forever), 'waiting',
  'A wait without a timeout is still waiting a month later.');

-- the event arrives after the timeout: it wakes the other waiter, the timed-out outcome stands
select is(conductor.emit_event('reap-ev-approved', '{"yes": true}'), 1, 'The late event wakes only the one still waiting.');
select conductor_tests.claim_one('reap-ev') as a2 \gset
select results_eq(format($$select state, result from conductor.suspend(%s, 'approval', 'event', 'reap-ev-approved')$$,
                         (select attempt_id from conductor.tasks where id = :t)),
  $$values ('ready'::text, '{"event": "reap-ev-approved", "timed_out": true}'::jsonb)$$,
  'The replayed wait of the timed-out task still sees the timeout.');

select * from finish();
rollback;
