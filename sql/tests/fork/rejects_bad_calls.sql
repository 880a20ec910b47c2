-- fork raises QC130 naming the step the task does not have, QC204 for an unfinished task,
-- QC203 for one that does not exist; nothing is written.
begin;
select plan(4);
\ir ../helpers.psql

select conductor.enqueue('k', '{}', 'fork-bad') as t \gset
select conductor_tests.claim_one('fork-bad') as a \gset
select conductor.save_step(:a, 'charge', '1') as s \gset
select throws_ok(format($$select conductor.fork(%s, 'charge')$$, :t), 'QC204',
  format('task %s is running; only a finished task can be forked', :t), 'A running task is refused with QC204.');
select conductor.fail(:a, 'boom') as f \gset
select throws_ok(format($$select conductor.fork(%s, 'refund')$$, :t), 'QC130',
  format('task %s has no step ''refund''', :t), 'An unknown step is refused with QC130, naming it.');
select throws_ok($$select conductor.fork(-1, 'charge')$$, 'QC203', 'task -1 does not exist', 'A task that does not exist is QC203.');
select is((select count(*) from conductor.tasks where queue = 'fork-bad'), 1::bigint, 'No copy was written.');

select * from finish();
rollback;
