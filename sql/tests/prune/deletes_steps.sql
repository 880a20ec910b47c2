-- prune() deletes the checkpointed steps of the tasks it deletes, and keeps the others'.
begin;
select plan(3);
\ir ../helpers.psql

set local conductor.fake_now = '2030-01-01 00:00:00+00';
select conductor.enqueue('k', '{}', 'pr-st') as old \gset
select conductor_tests.claim_one('pr-st') as a_old \gset
select conductor.save_step(attempt_id => :a_old, name => 's1', result => '{"v": 1}');
select conductor.complete(:a_old, '{}');
set local conductor.fake_now = '2030-01-20 00:00:00+00';
select conductor.enqueue('k', '{}', 'pr-st') as new \gset
select conductor_tests.claim_one('pr-st') as a_new \gset
select conductor.save_step(attempt_id => :a_new, name => 's1', result => '{"v": 2}');
set local conductor.fake_now = '2030-01-21 00:00:00+00';

select is((select count(*) from conductor.steps where task_id = :old), 1::bigint, 'The old task has a step before the prune.');
select is(conductor.prune(interval '7 days'), 1::bigint, 'The old task is pruned.');
select results_eq(format('select task_id from conductor.steps where task_id in (%s, %s)', :old, :new),
  format('values (%s::bigint)', :new), 'Its step went with it; the running task''s step stays.');

select * from finish();
rollback;
