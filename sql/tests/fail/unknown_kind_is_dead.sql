-- fail(unknown_kind => true): no worker knows the kind, so the task is dead at once, attempts left or not.
begin;
select plan(3);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.enqueue('no_such_handler', '{}', 'unknown-q', max_attempts => 10) as t \gset
select conductor_tests.claim_one('unknown-q', 'worker-9') as a \gset

select is(conductor.fail(:a, 'KeyError', unknown_kind => true), 'dead'::conductor.task_status,
  'An unknown kind answers dead although nine attempts remain.');
select is((select (status, error, finished_at, recoveries)::text from conductor.tasks where id = :t),
  (select ('dead', 'no handler for kind ''no_such_handler'' on worker worker-9: KeyError',
           '2030-01-01 00:00:00+00'::timestamptz, 0)::text),
  'The task is dead, finished, and its error names the kind, the worker and the error given.');
select is((select outcome from conductor.attempts where id = :a), 'failed', 'The attempt is closed as failed.');

select * from finish();
rollback;
