-- prune() deletes with a task what issue 31 keeps beside it (no foreign key does it: its
-- triggers would run at every update of a task): its conductor.forks row (it is a fork),
-- its published state (run_states) and its updates; a task kept keeps its own.
begin;
select plan(3);
\ir ../helpers.psql

set local conductor.fake_now = '2030-01-01 00:00:00+00';
select conductor.enqueue('k', '{}', 'pr-x') as src \gset
select conductor_tests.claim_one('pr-x') as a_src \gset
select conductor.save_step(:a_src, 's1', '1') as s1 \gset
select conductor.complete(:a_src, '{}') as c1 \gset
select conductor.fork(:src, 's1') as f \gset
select conductor_tests.claim_one('pr-x') as a_f \gset
select conductor.set_run_state(:a_f, '{"stage": 1}') as st \gset
select conductor.send_update(:f, 'ask', '1') as u \gset
select conductor.complete(:a_f, '{}') as c2 \gset
set local conductor.fake_now = '2030-01-20 00:00:00+00';
select conductor.enqueue('k', '{}', 'pr-x') as kept \gset
select conductor_tests.claim_one('pr-x') as a_kept \gset
select conductor.set_run_state(:a_kept, '{"stage": 2}') as st2 \gset
select conductor.send_update(:kept, 'ask', '2') as u2 \gset
set local conductor.fake_now = '2030-01-21 00:00:00+00';

select is((select count(*) from conductor.forks where task_id = :f)
          + (select count(*) from conductor.run_states where task_id = :f)
          + (select count(*) from conductor.updates where task_id = :f), 3::bigint,
  'Setup: the fork has its forks, run_states and updates rows.');
select is(conductor.prune(interval '7 days'), 2::bigint, 'The source and its fork are pruned.');
select is((select array[(select count(*) from conductor.forks where task_id in (:f, :kept)),
                        (select count(*) from conductor.run_states where task_id in (:f, :kept)),
                        (select count(*) from conductor.updates where task_id in (:f, :kept))]),
  array[0, 1, 1]::bigint[], 'The fork''s rows went with it; the running task keeps its state and update.');

select * from finish();
rollback;
