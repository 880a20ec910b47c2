-- fail raises QC106 for a retry_at that is not finite or outside the years 1-9999, naming
-- the value; the task and its attempt are unchanged, still held.
begin;
select plan(5);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.enqueue('k', '{}', 'retry-inf-q', max_attempts => 5) as t \gset
select conductor_tests.claim_one('retry-inf-q') as a \gset
create temp table before as select conductor_tests.task(:t) as task, conductor_tests.attempt(:a) as attempt;

select throws_ok(format('select conductor.fail(%s, %L, retry_at => %L)', :a, 'boom', 'infinity'), 'QC106',
  'invalid retry_at infinity: a time is finite, from 0001-01-02 to 9999-12-30 UTC',
  'retry_at infinity is refused with QC106, the message naming it.');
select throws_ok(format('select conductor.fail(%s, %L, retry_at => %L)', :a, 'boom', '-infinity'), 'QC106', NULL,
  'retry_at -infinity is refused with QC106.');
select throws_ok(format('select conductor.fail(%s, %L, retry_at => %L)', :a, 'boom', '20000-01-01 00:00:00+00'),
  'QC106', NULL, 'A retry_at past the year 9999 is refused with QC106.');
select is((select (conductor_tests.task(:t), conductor_tests.attempt(:a))::text),
  (select (task, attempt)::text from before), 'The task and the attempt are unchanged.');
select is(conductor.fail(:a, 'boom', retry_at => '2030-01-01 01:00:00+00'), 'queued'::conductor.task_status,
  'The attempt still holds the task and can fail it with a good retry_at.');

select * from finish();
rollback;
