-- A claim never starts a task past its deadline to start (expires_at), from one queue,
-- several, all, or with a concurrency key; before it, the task starts and its deadline is
-- cleared: a task started once never expires (a failure's retry with backoff, a lost
-- worker's and a released task are claimed again whenever they come up).
begin;
select plan(8);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.enqueue('k', '{}', 'exp-c1', expires_in => '1 minute') as t_one \gset
select conductor.enqueue('k', '{}', 'exp-c2', expires_in => '1 minute') as t_many \gset
select conductor.enqueue('k', '{}', 'exp-c3', expires_in => '1 minute', concurrency_key => 'exp-key') as t_keyed \gset
select conductor.enqueue('k', '{}', 'exp-c1') as t_plain \gset

set local conductor.fake_now = '2030-01-01 00:01:00+00';
select results_eq($$select task_id from conductor.claim('w1', '{exp-c1}', 10, '1 minute')$$,
  format('values (%s::bigint)', :t_plain),
  'From one queue, a claim at the deadline passes over the task and takes the one without a deadline.');
select is_empty($$select * from conductor.claim('w1', '{exp-c2,exp-other}', 10, '1 minute')$$,
  'From several queues, it passes over it too.');
select is_empty($$select * from conductor.claim('w1', '{exp-c3}', 10, '1 minute')$$,
  'With a concurrency key, it passes over it too.');
select is((select count(*) from conductor.tasks where id in (:t_one, :t_many, :t_keyed) and status = 'queued'), 3::bigint,
  'The tasks passed over are left queued, for reap() to end.');

-- before the deadline: started, the deadline cleared; it then never expires
set local conductor.fake_now = '2030-01-01 00:10:00+00';
select conductor.enqueue('k', '{}', 'exp-c4', expires_in => '1 minute', max_attempts => 2,
                         backoff_base => '1 hour', backoff_max => '1 hour') as t_retried \gset
select conductor_tests.claim_one('exp-c4') as a1 \gset
select results_eq(format('select status::text, expires_in, expires_at from conductor.tasks where id = %s', :t_retried),
  $$values ('running'::text, '1 minute'::interval, null::timestamptz)$$,
  'Claimed before its deadline, the task starts and its deadline is cleared (expires_in stays).');
select is(conductor.fail(:a1, 'boom')::text, 'queued', 'It fails and is queued again after a 1 hour backoff.');
set local conductor.fake_now = '2030-01-01 01:10:01+00';
select is(conductor.reap_report() is not null, true, 'A reap long past the first deadline ...');
select results_eq($$select task_id from conductor.claim('w1', '{exp-c4}', 1, '1 minute')$$,
  format('values (%s::bigint)', :t_retried),
  '... leaves it queued, and a claim starts it: a task started once never expires.');

select * from finish();
rollback;
