-- An expired lease whose attempt reached its deadline (claimed_at + timeout) is a failure,
-- not a lost worker: the attempt is closed 'failed' with 'timed out after N s', the task
-- retried after the backoff (the kind's policy here) while attempts remain, as fail()
-- does, and 'failed' after the last; recoveries are untouched. A lease that expires
-- before the deadline is still a lost worker. Reaped as conductor_worker.
begin;
select plan(8);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.configure_kind('slow', backoff_base => '10 seconds') as cfg \gset
select conductor.enqueue('slow', '{}', 'reap-to', timeout => '2 seconds', max_attempts => 2) as t \gset
select conductor.enqueue('slow', '{}', 'reap-to-lost', timeout => '10 minutes') as t_lost \gset
select conductor_tests.claim_one('reap-to', 'w1', '60 seconds') as a1 \gset
select conductor_tests.claim_one('reap-to-lost', 'w1', '60 seconds') as a_lost \gset

create role t_worker;
grant conductor_worker to t_worker;
set local role t_worker;

set local conductor.fake_now = '2030-01-01 00:00:02+00';
select is(conductor.reap(), 0, 'At the deadline itself the lease has not expired: nothing is reaped.');

set local conductor.fake_now = '2030-01-01 00:00:02.5+00';
select is(conductor.reap(), 1, 'Past it, reap() takes the timed-out task.');
reset role;
select is(
  (select jsonb_build_object('status', status, 'attempt', attempt, 'recoveries', recoveries, 'error', error,
                             'run_at', run_at, 'lease_expires_at', lease_expires_at, 'finished_at', finished_at)
     from conductor.tasks where id = :t),
  jsonb_build_object('status', 'queued', 'attempt', 1, 'recoveries', 0, 'error', 'timed out after 2 s',
                     'run_at', '2030-01-01 00:00:02.5+00'::timestamptz
                               + conductor._backoff(:t, 1, '10 seconds', null, null),
                     'lease_expires_at', null, 'finished_at', null),
  'The task is queued for a retry after the kind''s backoff: the attempt counts, recoveries do not.');
select is(
  (select jsonb_build_object('outcome', outcome, 'error', error, 'finished_at', finished_at)
     from conductor.attempts where id = :a1),
  jsonb_build_object('outcome', 'failed', 'error', 'timed out after 2 s',
                     'finished_at', '2030-01-01 00:00:02.5+00'::timestamptz),
  'The attempt is closed as failed: timed out after 2 s.');

-- the retry times out too: no attempt remains
select run_at as retry_at from conductor.tasks where id = :t \gset
set local conductor.fake_now = :'retry_at';
select conductor_tests.claim_one('reap-to', 'w1', '60 seconds') as a2 \gset
set local role t_worker;
set local conductor.fake_now = '2030-01-01 00:01:30+00';
select is(conductor.reap(), 2, 'reap() takes the second timed-out attempt, and the expired lease of the other task.');
reset role;
select is(
  (select jsonb_build_object('status', status, 'attempt', attempt, 'error', error, 'finished_at', finished_at)
     from conductor.tasks where id = :t),
  jsonb_build_object('status', 'failed', 'attempt', 2, 'error', 'timed out after 2 s',
                     'finished_at', '2030-01-01 00:01:30+00'::timestamptz),
  'With no attempt left, the task ends failed.');

-- the task with a 10 minute limit lost its 60 s lease (at 00:01:00) long before its deadline
select is(
  (select jsonb_build_object('status', status, 'attempt', attempt, 'recoveries', recoveries)
     from conductor.tasks where id = :t_lost),
  jsonb_build_object('status', 'queued', 'attempt', 0, 'recoveries', 1),
  'A lease that expired before the deadline is a lost worker: recoveries + 1, the attempt given back.');
select is((select outcome from conductor.attempts where id = :a_lost), 'lost',
  'Its attempt is closed as lost.');

select * from finish();
rollback;
