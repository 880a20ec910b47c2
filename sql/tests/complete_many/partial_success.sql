-- complete_many stores the results of the attempts that hold their tasks and answers the refused ones.
begin;
select plan(5);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.enqueue('k', '{}', 'many-1') as t1 \gset
select conductor.enqueue('k', '{}', 'many-2') as t2 \gset
select conductor.enqueue('k', '{}', 'many-3') as t3 \gset
select conductor.enqueue('k', '{}', 'many-4') as t4 \gset
select conductor_tests.claim_one('many-3', 'w1', '10 seconds') as a3 \gset
set local conductor.fake_now = '2030-01-01 00:00:30+00';
select conductor.reap() as reaped \gset
select conductor_tests.claim_one('many-1') as a1 \gset
select conductor_tests.claim_one('many-2') as a2 \gset
select conductor_tests.claim_one('many-4') as a4 \gset
select conductor.cancel(:t2) as n \gset
select conductor_tests.task(:t2) as t2_before \gset
select conductor_tests.task(:t3) as t3_before \gset

select set_eq(
  format($$select attempt_id, task_id, state from conductor.complete_many(array[%s, %s, %s, %s, -7]::bigint[],
           array['{"r": 1}', '{"r": 2}', '{"r": 3}', '{"r": 4}', '{"r": 5}']::jsonb[])$$, :a1, :a2, :a3, :a4),
  format($$values (%s::bigint, %s::bigint, 'cancelled'::text), (%s, %s, 'lost'), (-7, NULL, 'lost')$$,
         :a2, :t2, :a3, :t3),
  'The answer lists the cancelled, the lost and the unknown attempts with their reasons.');
select results_eq(format('select status::text, result from conductor.tasks where id in (%s, %s) order by id', :t1, :t4),
  $$values ('succeeded', '{"r": 1}'::jsonb), ('succeeded', '{"r": 4}'::jsonb)$$,
  'The held tasks are succeeded, each with its own result.');
select is(conductor_tests.task(:t2), :'t2_before'::jsonb, 'The cancelled task is unchanged.');
select is(conductor_tests.task(:t3), :'t3_before'::jsonb, 'The reaped task is unchanged.');
select is((select array_agg(outcome order by id) from conductor.attempts where id in (:a1, :a4)),
  array['succeeded', 'succeeded'], 'The completed attempts are closed as succeeded.');

select * from finish();
rollback;
