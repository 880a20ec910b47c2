-- fail(retryable => false) fails the task at once, whatever attempts remain: the handler
-- finished but its result could not be stored, and a new attempt would redo its effects.
begin;
select plan(4);
\ir ../helpers.psql

select conductor.enqueue('k', '{}', 'final-q', max_attempts => 5) as t \gset
select conductor_tests.claim_one('final-q') as a \gset

select is(conductor.fail(:a, 'result not storable: NUL', retryable => false), 'failed'::conductor.task_status,
  'With four attempts left, a failure that is not retryable answers failed.');
select is((select status::text || ' ' || attempt || '/' || max_attempts from conductor.tasks where id = :t), 'failed 1/5',
  'The task is failed after its first attempt.');
select is((select error from conductor.attempts where id = :a), 'result not storable: NUL',
  'The attempt keeps the error.');

select conductor.enqueue('k', '{}', 'final-q2', max_attempts => 5) as t2 \gset
select conductor_tests.claim_one('final-q2') as a2 \gset
select is(conductor.fail(:a2, 'boom'), 'queued'::conductor.task_status,
  'Without it, the same task would be retried (retryable defaults to true).');

select * from finish();
rollback;
