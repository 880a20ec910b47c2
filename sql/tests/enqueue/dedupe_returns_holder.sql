-- A dedupe_key held by an unfinished task: enqueue returns the holder's id and writes nothing.
begin;
select plan(6);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.enqueue('report', '{"n": 1}', 'dedupe-q', dedupe_key => 'daily-report') as holder \gset
select conductor_tests.task(:holder) as holder_before \gset
create temp table before_count as select count(*) as n from conductor.tasks;

select is(conductor.enqueue('report', '{"n": 2}', 'dedupe-q', dedupe_key => 'daily-report'), :holder::bigint,
  'A second enqueue with a queued holder''s dedupe_key returns the holder''s id.');
select is(conductor.enqueue('other_kind', '{}', 'elsewhere', priority => 9, dedupe_key => 'daily-report'), :holder::bigint,
  'The key alone decides: another kind, queue and priority still get the holder''s id.');
select is((select count(*) from conductor.tasks) - (select n from before_count), 0::bigint,
  'The duplicates wrote no task.');
select is(conductor_tests.task(:holder), :'holder_before'::jsonb,
  'The holder is unchanged: its payload is not overwritten by the duplicate''s.');

select conductor_tests.claim_one('dedupe-q') as a1 \gset
select is(conductor.enqueue('report', '{}', 'dedupe-q', dedupe_key => 'daily-report'), :holder::bigint,
  'A running holder still holds its key.');

select isnt(conductor.enqueue('report', '{}', 'dedupe-q', dedupe_key => 'weekly-report'), :holder::bigint,
  'Another key is another task.');

select * from finish();
rollback;
