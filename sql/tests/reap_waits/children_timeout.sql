-- A wait for children past its deadline (4 h by default, under the fake clock) ends the task
-- timed_out with an error; reap first cancels its unfinished children and leaves the finished ones.
begin;
select plan(6);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.enqueue('root', '{}', 'reap-kids') as root \gset
select conductor_tests.claim_one('reap-kids') as a \gset
select conductor.spawn(:a, 'c1', 'kid', '{}', 'reap-kids-kids') as done \gset
select conductor.spawn(:a, 'c2', 'kid', '{}', 'reap-kids-kids') as running \gset
select conductor.spawn(:a, 'c3', 'kid', '{}', 'reap-kids-kids') as queued \gset
select conductor.complete(conductor_tests.claim_one('reap-kids-kids'), '"ok"') as x \gset
select state from conductor.suspend(:a, 'join', 'children_all') \gset
update conductor.settings set max_lease = '5 hours';  -- a lease past the 4 h deadline (1 h by default)
select conductor_tests.claim_one('reap-kids-kids', 'w1', '5 hours') as ar \gset

set local conductor.fake_now = '2030-01-01 03:59:59.999999+00';
select conductor.reap() as r1 \gset
select is((select status::text from conductor.tasks where id = :root), 'waiting', 'Just before 4 h the parent still waits.');

set local conductor.fake_now = '2030-01-01 04:00:00+00';
select is(conductor.reap(), 1, 'At 4 h reap ends the wait and counts it.');
select is((select jsonb_build_object('status', status, 'finished_at', finished_at, 'error', error, 'wait_for', wait_for,
                                     'wait_until', wait_until) from conductor.tasks where id = :root),
  jsonb_build_object('status', 'timed_out', 'finished_at', '2030-01-01 04:00:00+00'::timestamptz,
    'error', format('waited for its children past its deadline %s', '2030-01-01 04:00:00+00'::timestamptz),
    'wait_for', null, 'wait_until', null),
  'The parent ends timed_out now, with an error naming its deadline.');
select results_eq(format('select task_id, status::text from conductor.children(%s)', :root),
  format($$values (%s::bigint, 'succeeded'::text), (%s, 'cancelled'), (%s, 'cancelled')$$, :done, :running, :queued),
  'The unfinished children are cancelled; the finished one is untouched.');
select is((select outcome from conductor.attempts where id = :ar), 'cancelled', 'The running child''s attempt is closed as cancelled.');
select is_empty(format($$select * from conductor.steps where task_id = %s and name = 'join'$$, :root),
  'The parent is not woken by its children''s cancellation: no outcome is checkpointed.');

select * from finish();
rollback;
