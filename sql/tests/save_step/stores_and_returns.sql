-- save_step checkpoints a step of the held task and returns the result it stored.
begin;
select plan(4);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.enqueue('k', '{}', 'save-store') as t \gset
select conductor_tests.claim_one('save-store') as a \gset

select is(conductor.save_step(:a, 'charge', '{"charged": 42}'), '{"charged": 42}'::jsonb,
  'save_step returns the result it stored.');
select is(
  (select jsonb_build_object('result', result, 'attempt_id', attempt_id, 'saved_at', saved_at)
     from conductor.steps where task_id = :t and name = 'charge'),
  jsonb_build_object('result', '{"charged": 42}'::jsonb, 'attempt_id', :a, 'saved_at', '2030-01-01 00:00:00+00'::timestamptz),
  'The step is stored under the task with its result, the attempt that saved it and the time.');
select is(conductor.save_step(:a, 'nothing'), null::jsonb,
  'A step without a result is stored as NULL and NULL is returned.');
select ok(exists (select from conductor.steps where task_id = :t and name = 'nothing' and result is null),
  'The step with a NULL result exists all the same.');

select * from finish();
rollback;
