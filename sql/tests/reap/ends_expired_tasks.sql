-- reap() ends 'expired' each queued task never started whose deadline to start has come:
-- finished_at now, the error naming the deadline, counted in reap_report().tasks_expired;
-- not a moment before the deadline, never a running task; next_wake() names the deadline;
-- retry() queues an expired task again with a fresh deadline.
begin;
select plan(10);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.enqueue('k', '{}', 'exp-r', expires_in => '1 minute') as t_due \gset
select conductor.enqueue('k', '{}', 'exp-r', run_at => '2030-01-01 00:30:00+00', expires_in => '1 minute') as t_later \gset
select conductor.enqueue('k', '{}', 'exp-r-run', expires_in => '1 minute') as t_run \gset
select conductor.enqueue('k', '{}', 'exp-r') as t_plain \gset
select conductor_tests.claim_one('exp-r-run', 'w1', '1 hour') as a_run \gset

select is(conductor.next_wake(), '2030-01-01 00:01:00+00'::timestamptz,
  'next_wake() answers the earliest deadline to start, so a worker reaps on time.');

set local conductor.fake_now = '2030-01-01 00:00:59.999999+00';
select is((select tasks_expired from conductor.reap_report()), 0, 'Before the deadline nothing expires.');

set local conductor.fake_now = '2030-01-01 00:01:00+00';
select is((select tasks_expired from conductor.reap_report()), 1, 'At the deadline reap ends the task, and says so.');
select results_eq(format('select status::text, finished_at, error from conductor.tasks where id = %s', :t_due),
  $$values ('expired'::text, '2030-01-01 00:01:00+00'::timestamptz,
            'expired: not started by its deadline 2030-01-01T00:01:00.000000Z (expires_in 00:01:00 after it was due)'::text)$$,
  'The task is expired, finished now, its error naming the deadline and expires_in.');
select is((select count(*) from conductor.attempts where task_id = :t_due), 0::bigint,
  'It never started: no attempt.');
select results_eq(format('select id, status::text from conductor.tasks where id in (%s, %s, %s) order by id', :t_later, :t_run, :t_plain),
  format($$values (%s::bigint, 'queued'::text), (%s::bigint, 'running'::text), (%s::bigint, 'queued'::text)$$,
         :t_later, :t_run, :t_plain),
  'A task due later, a running task and a task without a deadline are left alone.');
select is(conductor.reap(), 0, 'A second reap finds nothing more to end.');

set local conductor.fake_now = '2030-01-01 00:31:00+00';
select is((select tasks_expired from conductor.reap_report()), 1,
  'The task due later expires at its own due time + expires_in.');
select is(conductor.retry(:t_due), :t_due::bigint, 'An expired task can be retried ...');
select results_eq(format('select status::text, run_at, expires_at, error from conductor.tasks where id = %s', :t_due),
  $$values ('queued'::text, '2030-01-01 00:31:00+00'::timestamptz, '2030-01-01 00:32:00+00'::timestamptz, null::text)$$,
  '... and is queued again, due now, with a fresh deadline: now + its expires_in.');

select * from finish();
rollback;
