-- rewind raises QC130 naming the step when the task has no such step (or it is NULL), and
-- QC203 for a task that does not exist; nothing changes.
begin;
select plan(5);
\ir ../helpers.psql

select conductor.enqueue('k', '{}', 'rewind-unknown') as t \gset
select conductor_tests.claim_one('rewind-unknown') as a \gset
select conductor.save_step(:a, 'charge', '1') as s \gset
select conductor.fail(:a, 'boom') as f \gset
select conductor_tests.task(:t) as before \gset

select throws_ok(format($$select conductor.rewind(%s, 'refund')$$, :t), 'QC130',
  format('task %s has no step ''refund''', :t), 'An unknown step is refused with QC130, naming it.');
select throws_ok(format($$select conductor.rewind(%s, repeat('x', 300))$$, :t), 'QC130', null,
  'A long unknown step is refused too.');
select throws_ok(format($$select conductor.rewind(%s, null)$$, :t), 'QC130',
  format('invalid step NULL: name a step of task %s', :t), 'A NULL step is refused with QC130.');
select throws_ok($$select conductor.rewind(-1, 'charge')$$, 'QC203', 'task -1 does not exist',
  'A task that does not exist is QC203.');
select ok(conductor_tests.task(:t) = :'before'::jsonb and exists (select from conductor.steps where task_id = :t),
  'The task and its steps are unchanged.');

select * from finish();
rollback;
