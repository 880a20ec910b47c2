-- suspend refuses bad arguments with QC106 and leaves the task running: an unknown wait_for,
-- a missing or overlong event name, a missing or negative sleep, a timeout not positive, a bad step.
begin;
select plan(13);
\ir ../helpers.psql

select conductor.enqueue('k', '{}', 'susp-bad') as t \gset
select conductor_tests.claim_one('susp-bad') as a \gset

select throws_ok(format($$select * from conductor.suspend(%s, 's', 'forever')$$, :a), 'QC106', NULL,
  'An unknown wait_for is refused.');
select throws_ok(format($$select * from conductor.suspend(%s, 's', NULL)$$, :a), 'QC106', NULL,
  'A NULL wait_for is refused.');
select throws_ok(format($$select * from conductor.suspend(%s, 's', 'event')$$, :a), 'QC106', NULL,
  'An event wait without an event name is refused.');
select throws_ok(format($$select * from conductor.suspend(%s, 's', 'event', '')$$, :a), 'QC106', NULL,
  'An empty event name is refused.');
select throws_ok(format($$select * from conductor.suspend(%s, 's', 'event', repeat('e', 1001))$$, :a), 'QC106', NULL,
  'An event name over 1000 bytes is refused.');
select throws_ok(format($$select * from conductor.suspend(%s, 's', 'sleep')$$, :a), 'QC106', NULL,
  'A sleep without a duration is refused.');
select throws_ok(format($$select * from conductor.suspend(%s, 's', 'sleep', duration => '-1 second')$$, :a), 'QC106', NULL,
  'A negative sleep is refused.');
select throws_ok(format($$select * from conductor.suspend(%s, 's', 'children_all', timeout => '0')$$, :a), 'QC106', NULL,
  'A timeout of 0 is refused.');
select throws_ok(format($$select * from conductor.suspend(%s, 's', 'event', 'e', timeout => '-1 minute')$$, :a), 'QC106', NULL,
  'A negative timeout is refused.');
select throws_ok(format($$select * from conductor.suspend(%s, '', 'children_all')$$, :a), 'QC106', NULL,
  'An empty step name is refused.');
select is((select (status, attempt_id)::text from conductor.tasks where id = :t), format('(running,%s)', :a),
  'The task is still running under its attempt.');
select is_empty(format('select * from conductor.steps where task_id = %s', :t), 'Nothing was checkpointed.');
select throws_ok($$select * from conductor.suspend(-1, 's', 'children_all')$$, 'QC203', NULL,
  'An unknown attempt is refused with QC203.');

select * from finish();
rollback;
