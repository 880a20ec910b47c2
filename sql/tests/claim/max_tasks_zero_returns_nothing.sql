-- claim with max_tasks 0 returns nothing and changes nothing.
begin;
select plan(3);
\ir ../helpers.psql

select conductor.enqueue('k', '{}', 'zero-q') as id \gset
select conductor_tests.task(:id) as before \gset

select is_empty($$select * from conductor.claim('w1', array['zero-q'], 0)$$,
  'max_tasks 0 claims nothing.');
select is(conductor_tests.task(:id), :'before'::jsonb, 'The ready task is unchanged.');
select is((select count(*) from conductor.attempts where task_id = :id), 0::bigint, 'No attempt is recorded.');

select * from finish();
rollback;
