-- reap takes back a task whose lease expired: queued, recoveries + 1, the attempt given back and closed as lost.
begin;
select plan(6);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.enqueue('k', '{}', 'reap-q', max_attempts => 2) as t \gset
select run_at as run_at_before from conductor.tasks where id = :t \gset
select conductor_tests.claim_one('reap-q', 'w-crashed', '60 seconds') as a \gset

set local conductor.fake_now = '2030-01-01 00:01:00+00';
select is(conductor.reap(), 0, 'A lease that ends right now has not expired yet: nothing is reaped.');

set local conductor.fake_now = '2030-01-01 00:01:00.000001+00';
select is(conductor.reap(), 1, 'A microsecond after the lease ended, reap takes the task back and says so.');
select is(
  (select jsonb_build_object('status', status, 'recoveries', recoveries, 'attempt', attempt, 'lease_expires_at', lease_expires_at,
     'finished_at', finished_at, 'run_at', run_at, 'error', error) from conductor.tasks where id = :t),
  jsonb_build_object('status', 'queued', 'recoveries', 1, 'attempt', 0, 'lease_expires_at', null,
     'finished_at', null, 'run_at', :'run_at_before'::timestamptz, 'error', null),
  'The task is queued, recoveries 1, the lost attempt not counted, run_at unchanged.');
select is((select (outcome, finished_at, error)::text from conductor.attempts where id = :a),
  (select ('lost', '2030-01-01 00:01:00.000001+00'::timestamptz,
           format('lease expired at %s; worker w-crashed presumed lost', '2030-01-01 00:01:00.000001+00'::timestamptz))::text),
  'The attempt is closed as lost, its error naming the worker.');
select is(conductor.reap(), 0, 'A second reap finds nothing.');
select results_eq($$select attempt, recoveries from conductor.claim('w2', array['reap-q'])$$,
  $$values (1, 1)$$,
  'The next claim is attempt 1 again, carrying recoveries 1.');

select * from finish();
rollback;
