-- emit_event wakes every task waiting for the name, checkpointing {"event", "payload"} under
-- each waiter's wait step, and returns how many it woke; waiters of other events stay waiting.
begin;
select plan(6);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.enqueue('k', '{}', 'emit-wake') as t1 \gset
select conductor.enqueue('k', '{}', 'emit-wake') as t2 \gset
select conductor.enqueue('k', '{}', 'emit-wake') as other \gset
select conductor_tests.claim_one('emit-wake') as a1 \gset
select conductor_tests.claim_one('emit-wake') as a2 \gset
select conductor_tests.claim_one('emit-wake') as a3 \gset
select state from conductor.suspend(:a1, 'approval', 'event', 'emit-wake-approved') \gset
select state from conductor.suspend(:a2, 'gate', 'event', 'emit-wake-approved', timeout => '1 hour') \gset
select state from conductor.suspend(:a3, 'approval', 'event', 'emit-wake-other') \gset

set local conductor.fake_now = '2030-01-01 00:05:00+00';
select is(conductor.emit_event('emit-wake-approved', '{"by": "ann"}'), 2, 'emit_event returns the number of waiters it woke.');
select results_eq(format($$select id, status::text, run_at, wait_for, wait_event, wait_until, wait_step
                            from conductor.tasks where id in (%s, %s) order by id$$, :t1, :t2),
  format($$values (%s::bigint, 'queued', '2030-01-01 00:05:00+00'::timestamptz, null::text, null::text, null::timestamptz, null::text),
                  (%s::bigint, 'queued', '2030-01-01 00:05:00+00'::timestamptz, null, null, null, null)$$, :t1, :t2),
  'Both waiters are queued, due now, their wait columns cleared.');
select results_eq(format($$select task_id, name, result, attempt_id from conductor.steps where task_id in (%s, %s) order by task_id$$, :t1, :t2),
  format($$values (%s::bigint, 'approval'::text, '{"event": "emit-wake-approved", "payload": {"by": "ann"}}'::jsonb, null::bigint),
                  (%s::bigint, 'gate'::text, '{"event": "emit-wake-approved", "payload": {"by": "ann"}}'::jsonb, null::bigint)$$, :t1, :t2),
  'Each waiter''s outcome is checkpointed under its own wait step, written by the wake-up (no attempt).');
select is((select (status, wait_event)::text from conductor.tasks where id = :other), '(waiting,emit-wake-other)',
  'A waiter of another event is untouched.');
select is(conductor.emit_event('emit-wake-nobody'), 0, 'An event nobody waits for wakes nobody and returns 0.');
select results_eq($$select steps from conductor.claim('w2', array['emit-wake'], 1)$$,
  $$values ('{"approval": {"event": "emit-wake-approved", "payload": {"by": "ann"}}}'::jsonb)$$,
  'The woken task is claimed again with the event''s outcome among its steps.');

select * from finish();
rollback;
