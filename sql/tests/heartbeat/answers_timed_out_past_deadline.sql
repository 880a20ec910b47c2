-- An attempt whose deadline (claimed_at + timeout) has come is not extended: heartbeat
-- answers 'timed_out' (the worker stops the handler and reports it with fail), while it
-- is open and after reap() failed it as timed out. An attempt the worker itself failed
-- with another error is 'finished' as before.
begin;
select plan(7);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.enqueue('k', '{}', 'hb-to', timeout => '30 seconds', max_attempts => 3) as t \gset
select conductor.enqueue('k', '{}', 'hb-to-failed', timeout => '30 seconds') as t_failed \gset
select conductor_tests.claim_one('hb-to', 'w1', '60 seconds') as a \gset
select conductor_tests.claim_one('hb-to-failed', 'w1', '60 seconds') as a_failed \gset

create role t_worker;
grant conductor_worker to t_worker;
set local role t_worker;

set local conductor.fake_now = '2030-01-01 00:00:30+00';
select conductor.fail(:a_failed, 'boom') as f \gset
select set_eq(format($$select attempt_id, task_id, state from conductor.heartbeat('w1', array[%s, %s]::bigint[])$$,
                     :a, :a_failed),
  format($$values (%s::bigint, %s::bigint, 'timed_out'::text), (%s, %s, 'finished')$$, :a, :t, :a_failed, :t_failed),
  'At its deadline the open attempt is answered timed_out; one the worker failed with its own error is finished.');
select is((select lease_expires_at from conductor.tasks where id = :t), '2030-01-01 00:00:30+00'::timestamptz,
  'The timed-out attempt''s lease was not extended.');
select is((select status::text from conductor.tasks where id = :t), 'running',
  'The task is still running until the worker reports it or reap() fails it.');

set local conductor.fake_now = '2030-01-01 00:00:45+00';
select is(conductor.reap(), 1, 'reap() fails the attempt past its deadline.');
select results_eq(format($$select state from conductor.heartbeat('w1', array[%s]::bigint[])$$, :a),
  $$values ('timed_out'::text)$$,
  'After reap() failed it as timed out, a beat still answers timed_out, not finished: the worker did not report it.');
select is((select attempt_id from conductor.tasks where id = :t), :a::bigint,
  'The task, queued for a retry, still names the timed-out attempt.');
select throws_ok(format('select conductor.fail(%s, %L)', :a, 'timed out after 30 s'), 'QC201', NULL,
  'The worker''s own report then finds the attempt no longer holds the task (lease lost).');
reset role;

select * from finish();
rollback;
