-- prune() deletes succeeded and cancelled tasks finished before the cutoff, with their
-- attempts, and returns how many tasks went; newer and unfinished tasks stay.
begin;
select plan(8);
\ir ../helpers.psql

set local conductor.fake_now = '2030-01-01 00:00:00+00';
select conductor.enqueue('k', '{}', 'pr-a') as old_ok \gset
select conductor.complete(conductor_tests.claim_one('pr-a'), '{}');
select conductor.enqueue('k', '{}', 'pr-a') as old_cancelled \gset
select conductor.cancel(:old_cancelled);
select conductor.enqueue('k', '{}', 'pr-a') as old_queued \gset
set local conductor.fake_now = '2030-01-07 00:00:00+00';
select conductor.enqueue('k', '{}', 'pr-a') as new_ok \gset
select conductor.complete(conductor_tests.claim_one('pr-a'), '{}');  -- claims old_queued first
select conductor.enqueue('k', '{}', 'pr-a') as new_queued \gset
set local conductor.fake_now = '2030-01-09 00:00:00+00';

select is(conductor.prune(older_than => interval '7 days'), 2::bigint,
  'prune returns the number of tasks it deleted: the old succeeded and the old cancelled one.');
select is((select count(*) from conductor.tasks where id in (:old_ok, :old_cancelled)), 0::bigint,
  'The old succeeded and cancelled tasks are gone.');
select is((select count(*) from conductor.attempts where task_id in (:old_ok, :old_cancelled)), 0::bigint,
  'Their attempts are gone with them.');
select is((select status::text from conductor.tasks where id = :old_queued), 'succeeded',
  'A task enqueued long ago but finished recently stays (the cutoff is on finished_at).');
select is((select count(*) from conductor.attempts where task_id = :old_queued), 1::bigint,
  'Its attempt stays.');
select is((select status::text from conductor.tasks where id = :new_queued), 'queued',
  'An unfinished task stays.');
select is(conductor.prune(older_than => interval '7 days'), 0::bigint,
  'A second call finds nothing more to delete.');
select is(conductor.prune(older_than => interval '0'), 1::bigint,
  'older_than 0 deletes every finished task of a finished run, however recent.');

select * from finish();
rollback;
