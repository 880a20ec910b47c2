-- A step checkpointed twice keeps its first result: save_step returns the stored one.
begin;
select plan(4);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.enqueue('k', '{}', 'save-first') as t \gset
select conductor_tests.claim_one('save-first') as a \gset
select conductor.save_step(:a, 'charge', '"first"') as s1 \gset

set local conductor.fake_now = '2030-01-01 00:00:05+00';
select is(conductor.save_step(:a, 'charge', '"second"'), '"first"'::jsonb,
  'A second save of the same step returns the first result.');
select is((select (result, saved_at)::text from conductor.steps where task_id = :t and name = 'charge'),
  ('"first"'::jsonb, '2030-01-01 00:00:00+00'::timestamptz)::text,
  'The stored step keeps the first result and its time.');
select is(conductor.save_step(:a, 'charge#2', '"second"'), '"second"'::jsonb,
  'A numbered name (charge#2) is a step of its own.');
select is((select count(*) from conductor.steps where task_id = :t), 2::bigint,
  'The task has exactly two steps.');

select * from finish();
rollback;
