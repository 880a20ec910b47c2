-- suspend refuses, with QC106 naming the value, a sleep or a timeout that would end after
-- 9999-12-30 UTC (the last day every driver can read), however large (no overflow error),
-- and leaves the task running with nothing checkpointed; a wait ending before that is taken.
begin;
select plan(7);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.enqueue('k', '{}', 'susp-absurd') as t \gset
select conductor_tests.claim_one('susp-absurd') as a \gset

select throws_ok(format($$select * from conductor.suspend(%s, 's', 'sleep', duration => '7970 years')$$, :a), 'QC106',
  'invalid sleep duration 7970 years: the wait must end by 9999-12-30 UTC',
  'A sleep ending in the year 10000 is refused with QC106, naming the duration.');
select throws_ok(format($$select * from conductor.suspend(%s, 's', 'sleep', duration => '178000000 years')$$, :a), 'QC106',
  'invalid sleep duration 178000000 years: the wait must end by 9999-12-30 UTC',
  'The largest interval is refused with QC106, not an overflow error.');
select throws_ok(format($$select * from conductor.suspend(%s, 's', 'event', 'e', timeout => '100000 years')$$, :a), 'QC106',
  'invalid timeout 100000 years: the wait must end by 9999-12-30 UTC',
  'An event wait timing out after 9999 is refused with QC106, naming the timeout.');
select throws_ok(format($$select * from conductor.suspend(%s, 's', 'children_all', timeout => '8000 years')$$, :a), 'QC106',
  'invalid timeout 8000 years: the wait must end by 9999-12-30 UTC',
  'A children wait timing out after 9999 is refused with QC106.');
select is((select (status, attempt_id)::text from conductor.tasks where id = :t), format('(running,%s)', :a),
  'The task is still running under its attempt.');
select is_empty(format('select * from conductor.steps where task_id = %s', :t), 'Nothing was checkpointed.');

select is((select state from conductor.suspend(:a, 's', 'event', 'e', timeout => '7969 years')), 'waiting',
  'A timeout ending in 9999 is taken.');

select * from finish();
rollback;
