-- The state machine's invariants, which schema/hot_checks took out of CHECK
-- constraints (PostgreSQL parsed them at every statement writing the hot tables):
--   a task is running exactly when it has a lease, and then it has an attempt;
--   a task is unfinished (queued, running, waiting) exactly when it has no finished_at;
--   an attempt's outcome is one of the six, and it has one exactly when it has finished_at.
-- A task goes through every transition the engine makes (claim, complete, fail with a
-- retry and for good, release, suspend for a sleep, for an event and for children and their
-- wake-ups (the last by the child-finished trigger),
-- cancel, retry, a lost lease and a lost worker's last recovery, a time limit, an
-- unknown kind); after each step every row of both tables is checked, so a function
-- that breaks one fails here.
begin;
select plan(19);
\ir ../helpers.psql
delete from conductor.workers;
set local conductor.fake_now = '2030-01-01 00:00:00+00';

create function pg_temp.broken() returns setof text language sql as $$
  select pg_catalog.format('task %s: %s, lease %s, attempt %s, finished %s', t.id, t.status,
                           t.lease_expires_at, t.attempt_id, t.finished_at)
    from conductor.tasks t
   where (t.status = 'running') <> (t.lease_expires_at is not null)
      or (t.status = 'running' and t.attempt_id is null)
      or (t.status in ('queued', 'running', 'waiting')) <> (t.finished_at is null)
  union all
  select pg_catalog.format('attempt %s: outcome %s, finished %s', a.id, a.outcome, a.finished_at)
    from conductor.attempts a
   where (a.outcome is null) <> (a.finished_at is null)
      or a.outcome not in ('succeeded', 'failed', 'released', 'lost', 'cancelled', 'suspended')
$$;

select conductor.register_worker('inv-w') as r \gset
select conductor.enqueue('k', '{}', 'inv-done') as t_done \gset
select conductor.enqueue('k', '{}', 'inv-retry', max_attempts => 2) as t_retry \gset
select conductor.enqueue('k', '{}', 'inv-release') as t_release \gset
select conductor.enqueue('k', '{}', 'inv-sleep') as t_sleep \gset
select conductor.enqueue('k', '{}', 'inv-event') as t_event \gset
select conductor.enqueue('k', '{}', 'inv-cancel') as t_cancel \gset
select conductor.enqueue('k', '{}', 'inv-lost', max_recoveries => 2) as t_lost \gset
select conductor.enqueue('k', '{}', 'inv-limit', timeout => '2 seconds') as t_limit \gset
select conductor.enqueue('k', '{}', 'inv-unknown') as t_unknown \gset
select conductor.enqueue('k', '{}', 'inv-parent') as t_parent \gset
select is_empty('select * from pg_temp.broken()', 'Enqueued tasks keep the invariants.');

select conductor_tests.claim_one('inv-done', 'inv-w') as a_done \gset
select conductor_tests.claim_one('inv-retry', 'inv-w') as a_retry \gset
select conductor_tests.claim_one('inv-release', 'inv-w') as a_release \gset
select conductor_tests.claim_one('inv-sleep', 'inv-w') as a_sleep \gset
select conductor_tests.claim_one('inv-event', 'inv-w') as a_event \gset
select conductor_tests.claim_one('inv-cancel', 'inv-w') as a_cancel \gset
select conductor_tests.claim_one('inv-lost', 'inv-w', '10 seconds') as a_lost \gset
select conductor_tests.claim_one('inv-limit', 'inv-w') as a_limit \gset
select conductor_tests.claim_one('inv-unknown', 'inv-w') as a_unknown \gset
select conductor_tests.claim_one('inv-parent', 'inv-w') as a_parent \gset
select is_empty('select * from pg_temp.broken()', 'Claimed tasks keep them.');

select conductor.complete(:a_done, '{"ok": true}');
select is_empty('select * from pg_temp.broken()', 'A completion keeps them.');

select conductor.fail(:a_retry, 'boom', retry_at => '2030-01-01 00:00:01+00');
select is((select status::text from conductor.tasks where id = :t_retry), 'queued', 'A failure with attempts left queues the task again...');
select is_empty('select * from pg_temp.broken()', '...and keeps them.');
set local conductor.fake_now = '2030-01-01 00:00:02+00';
select conductor_tests.claim_one('inv-retry', 'inv-w') as a_retry2 \gset
select conductor.fail(:a_retry2, 'boom again');
select is_empty('select * from pg_temp.broken()', 'A failure for good keeps them.');

select conductor.release(:a_release);
select is_empty('select * from pg_temp.broken()', 'A release keeps them.');

select state from conductor.suspend(:a_sleep, 'nap', 'sleep', duration => '1 second') \gset
select state from conductor.suspend(:a_event, 'hear', 'event', event => 'inv-bell') \gset
select is_empty('select * from pg_temp.broken()', 'Suspended tasks keep them.');
select conductor.emit_event('inv-bell', '{}');
select is_empty('select * from pg_temp.broken()', 'An event''s wake-up keeps them.');

select conductor.spawn(:a_parent, 'kid', 'k', '{}', 'inv-kids') as t_kid \gset
select state from conductor.suspend(:a_parent, 'kids', 'children_all') \gset
select conductor_tests.claim_one('inv-kids', 'inv-w') as a_kid \gset
select conductor.complete(:a_kid, '{}');
select is((select status::text from conductor.tasks where id = :t_parent), 'queued',
  'A child''s end wakes its waiting parent...');
select is_empty('select * from pg_temp.broken()', '...and the trigger keeps them.');

select conductor.cancel(:t_cancel);
select is_empty('select * from pg_temp.broken()', 'A cancel of a running task keeps them.');

select conductor.fail(:a_unknown, 'no handler', unknown_kind => true);
select is_empty('select * from pg_temp.broken()', 'An unknown kind''s dead letter keeps them.');

-- an hour on: the sleep is over, the lost worker's lease and the time limit have passed
set local conductor.fake_now = '2030-01-01 01:00:00+00';
select conductor.reap();
select is((select status::text from conductor.tasks where id = :t_lost), 'queued', 'A lost lease puts the task back...');
select is((select status::text from conductor.tasks where id = :t_limit), 'failed', '...a time limit fails it...');
select is_empty('select * from pg_temp.broken()', '...and the reaper keeps them, the ended sleep too.');

select conductor_tests.claim_one('inv-lost', 'inv-w', '10 seconds') as a_lost2 \gset
set local conductor.fake_now = '2030-01-01 02:00:00+00';
select conductor.reap();
select is((select status::text from conductor.tasks where id = :t_lost), 'dead', 'A task past its recoveries is dead...');
select is_empty('select * from pg_temp.broken()', '...and keeps them.');

select conductor.retry(:t_retry);
select conductor.retry(:t_cancel);
select is_empty('select * from pg_temp.broken()', 'A retry of a failed and of a cancelled task keeps them.');

select * from finish();
rollback;
